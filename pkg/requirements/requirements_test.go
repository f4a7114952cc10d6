package requirements

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// matchCases cover every operator with the label present and absent, and the edge cases where implementations
// tend to differ: empty value lists, values on Exists/DoesNotExist, and integer parsing for Gt/Lt.
var matchCases = []struct {
	name    string
	r       corev1.NodeSelectorRequirement
	value   string
	present bool
	want    bool
}{
	{"In: value listed", req("k", corev1.NodeSelectorOpIn, "a", "b"), "b", true, true},
	{"In: value not listed", req("k", corev1.NodeSelectorOpIn, "a", "b"), "c", true, false},
	{"In: label absent", req("k", corev1.NodeSelectorOpIn, "a"), "", false, false},
	{"In: empty value listed", req("k", corev1.NodeSelectorOpIn, ""), "", true, true},
	{"In: absent label is not the empty value", req("k", corev1.NodeSelectorOpIn, ""), "", false, false},
	{"In: no values", req("k", corev1.NodeSelectorOpIn), "a", true, false},
	{"In: case-sensitive", req("k", corev1.NodeSelectorOpIn, "A"), "a", true, false},

	{"NotIn: value listed", req("k", corev1.NodeSelectorOpNotIn, "a", "b"), "a", true, false},
	{"NotIn: value not listed", req("k", corev1.NodeSelectorOpNotIn, "a", "b"), "c", true, true},
	{"NotIn: label absent", req("k", corev1.NodeSelectorOpNotIn, "a"), "", false, true},
	{"NotIn: no values, label present", req("k", corev1.NodeSelectorOpNotIn), "a", true, true},
	{"NotIn: no values, label absent", req("k", corev1.NodeSelectorOpNotIn), "", false, true},

	{"Exists: label present", req("k", corev1.NodeSelectorOpExists), "a", true, true},
	{"Exists: label present and empty", req("k", corev1.NodeSelectorOpExists), "", true, true},
	{"Exists: label absent", req("k", corev1.NodeSelectorOpExists), "", false, false},
	{"Exists: values ignored", req("k", corev1.NodeSelectorOpExists, "other"), "a", true, true},

	{"DoesNotExist: label absent", req("k", corev1.NodeSelectorOpDoesNotExist), "", false, true},
	{"DoesNotExist: label present", req("k", corev1.NodeSelectorOpDoesNotExist), "a", true, false},
	{"DoesNotExist: label present and empty", req("k", corev1.NodeSelectorOpDoesNotExist), "", true, false},
	{"DoesNotExist: values ignored", req("k", corev1.NodeSelectorOpDoesNotExist, "a"), "", false, true},

	{"Gt: greater", req("k", corev1.NodeSelectorOpGt, "4"), "5", true, true},
	{"Gt: equal", req("k", corev1.NodeSelectorOpGt, "5"), "5", true, false},
	{"Gt: less", req("k", corev1.NodeSelectorOpGt, "6"), "5", true, false},
	{"Gt: label absent", req("k", corev1.NodeSelectorOpGt, "4"), "", false, false},
	{"Gt: compares as integers, not strings", req("k", corev1.NodeSelectorOpGt, "9"), "10", true, true},
	{"Gt: negative numbers", req("k", corev1.NodeSelectorOpGt, "-2"), "-1", true, true},
	{"Gt: leading zeros", req("k", corev1.NodeSelectorOpGt, "6"), "007", true, true},
	{"Gt: leading plus sign", req("k", corev1.NodeSelectorOpGt, "4"), "+5", true, true},
	{"Gt: label not an integer", req("k", corev1.NodeSelectorOpGt, "4"), "five", true, false},
	{"Gt: label a decimal", req("k", corev1.NodeSelectorOpGt, "4"), "5.0", true, false},
	{"Gt: label with spaces", req("k", corev1.NodeSelectorOpGt, "4"), " 5", true, false},
	{"Gt: label overflows int64", req("k", corev1.NodeSelectorOpGt, "4"), "9223372036854775808", true, false},
	{"Gt: label empty", req("k", corev1.NodeSelectorOpGt, "4"), "", true, false},
	{"Gt: bound not an integer", req("k", corev1.NodeSelectorOpGt, "four"), "5", true, false},
	{"Gt: no values", req("k", corev1.NodeSelectorOpGt), "5", true, false},
	{"Gt: two values", req("k", corev1.NodeSelectorOpGt, "1", "2"), "5", true, false},

	{"Lt: less", req("k", corev1.NodeSelectorOpLt, "6"), "5", true, true},
	{"Lt: equal", req("k", corev1.NodeSelectorOpLt, "5"), "5", true, false},
	{"Lt: greater", req("k", corev1.NodeSelectorOpLt, "4"), "5", true, false},
	{"Lt: label absent", req("k", corev1.NodeSelectorOpLt, "6"), "", false, false},
	{"Lt: label not an integer", req("k", corev1.NodeSelectorOpLt, "6"), "amd64", true, false},
	{"Lt: bound not an integer", req("k", corev1.NodeSelectorOpLt, "6.5"), "5", true, false},
	{"Lt: no values", req("k", corev1.NodeSelectorOpLt), "5", true, false},
	{"Lt: two values", req("k", corev1.NodeSelectorOpLt, "6", "7"), "5", true, false},

	{"unknown operator", req("k", "Equals", "a"), "a", true, false},
	{"unknown operator, label absent", req("k", "Equals", "a"), "", false, false},
	{"empty operator", req("k", "", "a"), "a", true, false},
}

// inclusiveCases cover Karpenter's Gte and Lte, which labels.Requirement does not know (so they are not in
// matchCases, which TestMatchAgreesWithKubernetes replays).
var inclusiveCases = []struct {
	name    string
	r       corev1.NodeSelectorRequirement
	value   string
	present bool
	want    bool
}{
	{"Gte: greater", req("k", karpv1.NodeSelectorOpGte, "4"), "5", true, true},
	{"Gte: equal", req("k", karpv1.NodeSelectorOpGte, "5"), "5", true, true},
	{"Gte: less", req("k", karpv1.NodeSelectorOpGte, "6"), "5", true, false},
	{"Gte: compares as integers", req("k", karpv1.NodeSelectorOpGte, "9"), "10", true, true},
	{"Gte: label absent", req("k", karpv1.NodeSelectorOpGte, "0"), "", false, false},
	{"Gte: label not an integer", req("k", karpv1.NodeSelectorOpGte, "0"), "x", true, false},
	{"Gte: bound not an integer", req("k", karpv1.NodeSelectorOpGte, "four"), "5", true, false},
	{"Gte: two values", req("k", karpv1.NodeSelectorOpGte, "1", "2"), "5", true, false},
	{"Lte: less", req("k", karpv1.NodeSelectorOpLte, "6"), "5", true, true},
	{"Lte: equal", req("k", karpv1.NodeSelectorOpLte, "5"), "5", true, true},
	{"Lte: greater", req("k", karpv1.NodeSelectorOpLte, "4"), "5", true, false},
	{"Lte: leading zeros", req("k", karpv1.NodeSelectorOpLte, "8"), "008", true, true},
	{"Lte: label absent", req("k", karpv1.NodeSelectorOpLte, "6"), "", false, false},
	{"Lte: no values", req("k", karpv1.NodeSelectorOpLte), "5", true, false},
}

func TestMatchInclusive(t *testing.T) {
	for _, tc := range inclusiveCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Match(tc.r, tc.value, tc.present); got != tc.want {
				t.Errorf("Match(%s %s %q, value %q, present %v) = %v, want %v",
					tc.r.Key, tc.r.Operator, tc.r.Values, tc.value, tc.present, got, tc.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range matchCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Match(tc.r, tc.value, tc.present); got != tc.want {
				t.Errorf("Match(%s %s %q, value %q, present %v) = %v, want %v",
					tc.r.Key, tc.r.Operator, tc.r.Values, tc.value, tc.present, got, tc.want)
			}
		})
	}
}

// TestMatchAgreesWithKubernetes checks every case against labels.Requirement.Matches, what node affinity
// evaluates a requirement with once parsed. NewRequirement's validation error is ignored on purpose: Match does
// not validate, so both must agree on malformed requirements too.
func TestMatchAgreesWithKubernetes(t *testing.T) {
	ops := map[corev1.NodeSelectorOperator]selection.Operator{
		corev1.NodeSelectorOpIn:           selection.In,
		corev1.NodeSelectorOpNotIn:        selection.NotIn,
		corev1.NodeSelectorOpExists:       selection.Exists,
		corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
		corev1.NodeSelectorOpGt:           selection.GreaterThan,
		corev1.NodeSelectorOpLt:           selection.LessThan,
	}
	for _, tc := range matchCases {
		t.Run(tc.name, func(t *testing.T) {
			op, ok := ops[tc.r.Operator]
			if !ok {
				op = selection.Operator(tc.r.Operator)
			}
			kr, _ := labels.NewRequirement(tc.r.Key, op, tc.r.Values)
			if kr == nil {
				t.Fatalf("labels.NewRequirement returned no requirement")
			}
			set := labels.Set{}
			if tc.present {
				set[tc.r.Key] = tc.value
			}
			if got, want := Match(tc.r, tc.value, tc.present), kr.Matches(set); got != want {
				t.Errorf("Match = %v, labels.Requirement.Matches = %v", got, want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	lbls := map[string]string{"arch": "amd64", "gen": "5"}
	notTeam := func(k string) bool { return k != "team" }
	onlyPresent := func(k string) bool { _, ok := lbls[k]; return ok }
	cases := []struct {
		name string
		reqs []corev1.NodeSelectorRequirement
		keep func(string) bool
		want bool
	}{
		{"no requirements", nil, nil, true},
		{"no requirements, filter", nil, notTeam, true},
		{"in", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpIn, "arm64", "amd64")}, nil, true},
		{"in miss", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpIn, "arm64")}, nil, false},
		{"notin absent key", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpNotIn, "1")}, nil, true},
		{"notin hit", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpNotIn, "amd64")}, nil, false},
		{"exists absent", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpExists)}, nil, false},
		{"doesnotexist absent", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpDoesNotExist)}, nil, true},
		{"gt", []corev1.NodeSelectorRequirement{req("gen", corev1.NodeSelectorOpGt, "4")}, nil, true},
		{"lt non-integer label", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpLt, "6")}, nil, false},
		{"all must hold", []corev1.NodeSelectorRequirement{
			req("arch", corev1.NodeSelectorOpIn, "amd64"), req("gen", corev1.NodeSelectorOpLt, "5")}, nil, false},
		{"absent label without filter", []corev1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "a")}, nil, false},
		{"filtered-out key ignored", []corev1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "a")}, notTeam, true},
		{"kept key evaluated when absent", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpExists)}, notTeam, false},
		{"kept keys still all hold", []corev1.NodeSelectorRequirement{
			req("team", corev1.NodeSelectorOpIn, "a"), req("arch", corev1.NodeSelectorOpIn, "arm64")}, notTeam, false},
		{"filter by presence skips absent keys", []corev1.NodeSelectorRequirement{
			req("gpu", corev1.NodeSelectorOpExists), req("arch", corev1.NodeSelectorOpIn, "amd64")}, onlyPresent, true},
		{"filter by presence checks present keys", []corev1.NodeSelectorRequirement{
			req("gpu", corev1.NodeSelectorOpExists), req("gen", corev1.NodeSelectorOpGt, "5")}, onlyPresent, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.reqs, lbls, tc.keep); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchesNilLabels(t *testing.T) {
	reqs := []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpDoesNotExist), req("zone", corev1.NodeSelectorOpNotIn, "a")}
	if !Matches(reqs, nil, nil) {
		t.Errorf("Matches(DoesNotExist, NotIn) on nil labels = false, want true")
	}
	if Matches([]corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpExists)}, nil, nil) {
		t.Errorf("Matches(Exists) on nil labels = true, want false")
	}
}

func TestAllows(t *testing.T) {
	reqs := []corev1.NodeSelectorRequirement{
		req("ct", corev1.NodeSelectorOpIn, "spot", "on-demand"),
		req("ct", corev1.NodeSelectorOpNotIn, "on-demand"),
		req("zone", corev1.NodeSelectorOpNotIn, "a"),
		req("gen", corev1.NodeSelectorOpGt, "4"),
		req("arch", corev1.NodeSelectorOpDoesNotExist),
	}
	cases := []struct {
		key, value string
		want       bool
	}{
		{"ct", "spot", true},
		{"ct", "on-demand", false}, // every requirement on the key must hold
		{"ct", "reserved", false},
		{"zone", "a", false},
		{"zone", "b", true},
		{"gen", "5", true},
		{"gen", "4", false},
		{"arch", "amd64", false}, // a value for a key that must not exist
		{"team", "a", true},      // no requirement on the key
	}
	for _, tc := range cases {
		if got := Allows(reqs, tc.key, tc.value); got != tc.want {
			t.Errorf("Allows(%s=%s) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

func TestSingleValues(t *testing.T) {
	reqs := []corev1.NodeSelectorRequirement{
		req("ct", corev1.NodeSelectorOpIn, "spot"),
		req("zone", corev1.NodeSelectorOpNotIn, "a"),
		req("type", corev1.NodeSelectorOpIn, "m5.large", "c5.large"),
		req("gen", corev1.NodeSelectorOpGt, "4"),
		req("team", corev1.NodeSelectorOpIn, "a"),
	}
	want := map[string]string{"ct": "spot", "team": "a"}
	if d := cmp.Diff(want, SingleValues(reqs)); d != "" {
		t.Errorf("SingleValues (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{}, SingleValues(nil)); d != "" {
		t.Errorf("SingleValues(nil) (-want +got):\n%s", d)
	}
}
