package requirements

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestMatches(t *testing.T) {
	labels := map[string]string{"arch": "amd64", "gen": "5"}
	known := func(k string) bool { return k != "team" }
	cases := []struct {
		name string
		reqs []corev1.NodeSelectorRequirement
		want bool
	}{
		{"in", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpIn, "arm64", "amd64")}, true},
		{"in miss", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpIn, "arm64")}, false},
		{"notin absent key", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpNotIn, "1")}, true},
		{"notin hit", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpNotIn, "amd64")}, false},
		{"exists absent", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpExists)}, false},
		{"doesnotexist", []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpDoesNotExist)}, true},
		{"gt", []corev1.NodeSelectorRequirement{req("gen", corev1.NodeSelectorOpGt, "4")}, true},
		{"gt equal", []corev1.NodeSelectorRequirement{req("gen", corev1.NodeSelectorOpGt, "5")}, false},
		{"lt", []corev1.NodeSelectorRequirement{req("gen", corev1.NodeSelectorOpLt, "6")}, true},
		{"lt non-integer", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpLt, "6")}, false},
		{"unknown key ignored", []corev1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "a")}, true},
		{"all must hold", []corev1.NodeSelectorRequirement{req("arch", corev1.NodeSelectorOpIn, "amd64"), req("gen", corev1.NodeSelectorOpLt, "5")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.reqs, labels, known); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllowsAndSingleValues(t *testing.T) {
	reqs := []corev1.NodeSelectorRequirement{
		req("ct", corev1.NodeSelectorOpIn, "spot"),
		req("zone", corev1.NodeSelectorOpNotIn, "a"),
		req("type", corev1.NodeSelectorOpIn, "m5.large", "c5.large"),
	}
	if !Allows(reqs, "ct", "spot") || Allows(reqs, "ct", "on-demand") {
		t.Errorf("Allows on capacity type is wrong")
	}
	if Allows(reqs, "zone", "a") || !Allows(reqs, "zone", "b") {
		t.Errorf("Allows on zone is wrong")
	}
	got := SingleValues(reqs)
	if len(got) != 1 || got["ct"] != "spot" {
		t.Errorf("SingleValues = %v, want only ct=spot", got)
	}
}
