package scheduling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// TestInclusiveBounds checks that Gte and Lte become exclusive bounds and render back in a form NodeClaim
// requirements accept (non-negative values), and which label values they allow.
func TestInclusiveBounds(t *testing.T) {
	nsr := func(op corev1.NodeSelectorOperator, v string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: "k", Operator: op, Values: []string{v}}
	}
	cases := []struct {
		op        corev1.NodeSelectorOperator
		value     string
		want      []corev1.NodeSelectorRequirement
		allows    []string
		disallows []string
	}{
		{karpv1.NodeSelectorOpGte, "4", []corev1.NodeSelectorRequirement{nsr(corev1.NodeSelectorOpGt, "3")}, []string{"4", "5"}, []string{"3", "x"}},
		{karpv1.NodeSelectorOpGte, "0", []corev1.NodeSelectorRequirement{nsr(karpv1.NodeSelectorOpGte, "0")}, []string{"0", "9"}, []string{"-1"}},
		{karpv1.NodeSelectorOpLte, "8", []corev1.NodeSelectorRequirement{nsr(corev1.NodeSelectorOpLt, "9")}, []string{"8", "0"}, []string{"9"}},
		{karpv1.NodeSelectorOpLte, "0", []corev1.NodeSelectorRequirement{nsr(corev1.NodeSelectorOpLt, "1")}, []string{"0"}, []string{"1"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.op)+" "+tc.value, func(t *testing.T) {
			r, err := scheduling.NewRequirement("k", tc.op, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, r.NodeSelectorRequirements()); d != "" {
				t.Errorf("rendered (-want +got):\n%s", d)
			}
			for _, v := range tc.allows {
				if !r.Has(v) {
					t.Errorf("%s %s does not allow %s", tc.op, tc.value, v)
				}
			}
			for _, v := range tc.disallows {
				if r.Has(v) {
					t.Errorf("%s %s allows %s", tc.op, tc.value, v)
				}
			}
		})
	}
	for _, bad := range [][]string{{}, {"1", "2"}, {"four"}} {
		if _, err := scheduling.NewRequirement("k", karpv1.NodeSelectorOpGte, bad...); err == nil {
			t.Errorf("Gte %v accepted", bad)
		}
	}
}
