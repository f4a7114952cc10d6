package termination_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestTerminationMetrics follows one NodeClaim through a drain that a PodDisruptionBudget first refuses, and checks
// the figures exported under Karpenter's names: eviction requests by response code, the drained node, the
// node's lifetime, the NodeClaim's termination and instance-termination durations and its condition changes.
func TestTerminationMetrics(t *testing.T) {
	h := newHarness(t)
	h.launch(nil)
	h.pod(test.DrainPod("web").Labels("app", "web"))
	h.pdb("web-pdb", "web", 0)
	h.deleteClaim()
	h.reconcileClaim()
	h.reconcileNode()
	m := h.metrics
	if got := testutil.ToFloat64(m.NodesEvictionRequests.WithLabelValues("429")); got != 1 {
		t.Errorf("karpenter_nodes_eviction_requests_total{code=429} = %v, want 1 after one refused eviction", got)
	}
	if got := testutil.ToFloat64(m.NodesDrained.WithLabelValues("default")); got != 0 {
		t.Errorf("karpenter_nodes_drained_total = %v while a pod is still on the node, want 0", got)
	}

	h.setPDBAllowed(test.PDBFor(h.ns, "web-pdb", "web"), 1)
	h.clock.Step(termination.EvictionBackoffMax)
	h.settle(10)

	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"karpenter_nodes_eviction_requests_total{code=429}", testutil.ToFloat64(m.NodesEvictionRequests.WithLabelValues("429")), 1},
		{"karpenter_nodes_eviction_requests_total{code=200}", testutil.ToFloat64(m.NodesEvictionRequests.WithLabelValues("200")), 1},
		{"karpenter_nodes_drained_total{nodepool=default}", testutil.ToFloat64(m.NodesDrained.WithLabelValues("default")), 1},
		{"karpenter_nodes_terminated_total{nodepool=default}", testutil.ToFloat64(m.NodesTerminated.WithLabelValues("default")), 1},
		{"karpenter_nodeclaims_terminated_total{nodepool=default}", testutil.ToFloat64(m.NodeClaimsTerminated.WithLabelValues("default")), 1},
		{"karpenter_nodes_lifetime_duration_seconds{nodepool=default} observations",
			float64(test.HistogramCount(t, m.NodesLifetimeDuration, "default")), 1},
		{"karpenter_nodes_termination_duration_seconds{nodepool=default} observations",
			float64(test.SummaryCount(t, m.NodesTerminationDuration, "default")), 1},
		{"karpenter_nodeclaims_termination_duration_seconds{nodepool=default} observations",
			float64(test.HistogramCount(t, m.NodeClaimsTerminationDuration, "default")), 1},
		{"karpenter_nodeclaims_instance_termination_duration_seconds{nodepool=default} observations",
			float64(test.HistogramCount(t, m.NodeClaimsInstanceTerminationDuration, "default")), 1},
		{"operator_nodeclaim_status_condition_transitions_total{type=Drained,status=False,reason=Draining}",
			testutil.ToFloat64(m.NodeClaimConditionTransitions.WithLabelValues(termination.ConditionTypeDrained, "False", "Draining")), 1},
		{"operator_nodeclaim_status_condition_transitions_total{type=Drained,status=True,reason=Drained}",
			testutil.ToFloat64(m.NodeClaimConditionTransitions.WithLabelValues(termination.ConditionTypeDrained, "True", "Drained")), 1},
		{"operator_nodeclaim_status_condition_transitions_total{type=InstanceTerminating,status=True}",
			testutil.ToFloat64(m.NodeClaimConditionTransitions.WithLabelValues(karpv1.ConditionTypeInstanceTerminating, "True", "InstanceTerminating")), 1},
		{"operator_nodeclaim_status_condition_transition_seconds{type=Drained,status=False} observations",
			float64(test.HistogramCount(t, m.NodeClaimConditionDuration, termination.ConditionTypeDrained, "False")), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
