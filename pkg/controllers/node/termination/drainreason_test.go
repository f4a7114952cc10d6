package termination

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestDrainReason: the DisruptionReason condition's reason when True, Forceful Termination otherwise, "" without
// a NodeClaim.
func TestDrainReason(t *testing.T) {
	with := func(conds ...metav1.Condition) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{}
		nc.Status.Conditions = conds
		return nc
	}
	for _, tc := range []struct {
		name string
		nc   *karpv1.NodeClaim
		want string
	}{
		{"no nodeclaim", nil, ""},
		{"no condition", with(), "Forceful Termination"},
		{"drifted", with(metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Drifted"}), "Drifted"},
		{"condition false", with(metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionFalse, Reason: "Drifted"}), "Forceful Termination"},
	} {
		if got := drainReason(tc.nc); got != tc.want {
			t.Errorf("%s: drainReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}
