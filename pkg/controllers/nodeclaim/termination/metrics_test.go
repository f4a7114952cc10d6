package termination_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestTerminationDurations checks Karpenter's NodeClaim termination figures: every finished termination observes
// karpenter_nodeclaims_termination_duration_seconds; only one whose instance Dovetail terminated observes
// karpenter_nodeclaims_instance_termination_duration_seconds and the InstanceTerminating transition.
func TestTerminationDurations(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		launched                     bool
		wantInstance, wantTransition uint64
	}{
		{name: "launched", launched: true, wantInstance: 1, wantTransition: 1},
		{name: "never launched", launched: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			nc := f.claim("timed", nil, tc.launched, nil)
			for i := 0; i < 3 && f.get(nc.Name) != nil; i++ {
				f.reconcile(nc.Name)
			}
			if f.get(nc.Name) != nil {
				t.Fatalf("nodeclaim still present")
			}
			m := f.metrics
			if got := test.HistogramCount(t, m.NodeClaimsTerminationDuration, "pool-a"); got != 1 {
				t.Errorf("karpenter_nodeclaims_termination_duration_seconds{nodepool=pool-a} has %d observations, want 1", got)
			}
			if got := test.HistogramCount(t, m.NodeClaimsInstanceTerminationDuration, "pool-a"); got != tc.wantInstance {
				t.Errorf("karpenter_nodeclaims_instance_termination_duration_seconds{nodepool=pool-a} has %d observations, want %d", got, tc.wantInstance)
			}
			got := test.Sum(t, m.NodeClaimConditionTransitions, prometheus.Labels{"type": karpv1.ConditionTypeInstanceTerminating, "status": "True", "reason": "InstanceTerminating"})
			if uint64(got) != tc.wantTransition {
				t.Errorf("operator_nodeclaim_status_condition_transitions_total{type=InstanceTerminating,status=True} = %v, want %d", got, tc.wantTransition)
			}
		})
	}
}
