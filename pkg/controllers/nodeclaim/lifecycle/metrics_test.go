package lifecycle

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPhaseMetrics checks that launch, registration and initialization are exported under Karpenter's
// condition-transition names, once each, next to Dovetail's own phase durations.
func TestPhaseMetrics(t *testing.T) {
	h := newHarness(t)
	m := h.env.Deps.Metrics
	h.create(test.NodeClaim("timed", "pool-m").Obj())
	nc := h.reconcileUntil("timed", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	nc = h.reconcileUntil("timed", conditionIs(karpv1.ConditionTypeRegistered, metav1.ConditionFalse, karpv1.ReasonNodeNotFound,
		"waiting for a Node with providerID "+nc.Status.ProviderID+" to join the cluster"))
	h.create(test.Node("timed-node", nc.Status.ProviderID).Ready(true).Obj())
	// The API server's admission adds the not-ready taint to a new Node; the node lifecycle controller would drop it.
	h.updateNode("timed-node", func(n *corev1.Node) { n.Spec.Taints = nil })
	h.reconcileUntil("timed", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeInitialized) })

	for _, tc := range []struct {
		condition, status, reason string
	}{
		{karpv1.ConditionTypeLaunched, "True", karpv1.ReasonLaunched},
		{karpv1.ConditionTypeRegistered, "False", karpv1.ReasonNodeNotFound},
		{karpv1.ConditionTypeRegistered, "True", karpv1.ReasonRegistered},
		{karpv1.ConditionTypeInitialized, "True", karpv1.ReasonInitialized},
	} {
		if got := test.Sum(t, m.NodeClaimConditionTransitions, prometheus.Labels{"type": tc.condition, "status": tc.status, "reason": tc.reason}); got != 1 {
			t.Errorf("operator_nodeclaim_status_condition_transitions_total{type=%q,status=%q,reason=%q} = %v, want 1",
				tc.condition, tc.status, tc.reason, got)
		}
		if got := testutil.ToFloat64(m.ConditionTransitions.WithLabelValues("karpenter.sh", "NodeClaim", tc.condition, tc.status, tc.reason)); got != 1 {
			t.Errorf("operator_status_condition_transitions_total{type=%q,status=%q,reason=%q} = %v, want 1",
				tc.condition, tc.status, tc.reason, got)
		}
	}
	// Time held in the status left: Launched was Unknown until launch, Registered False while the Node was missing.
	for _, series := range [][2]string{
		{karpv1.ConditionTypeLaunched, "Unknown"},
		{karpv1.ConditionTypeRegistered, "Unknown"},
		{karpv1.ConditionTypeRegistered, "False"},
	} {
		if got := uint64(test.Sum(t, m.NodeClaimConditionDuration, prometheus.Labels{"type": series[0], "status": series[1]})); got != 1 {
			t.Errorf("operator_nodeclaim_status_condition_transition_seconds{type=%q,status=%q} has %d observations, want 1",
				series[0], series[1], got)
		}
	}
	if got := uint64(test.Sum(t, m.NodeClaimConditionDuration, prometheus.Labels{"type": karpv1.ConditionTypeLaunched, "status": "False"})); got != 0 {
		t.Errorf("Launched never was False, yet %d observations left False", got)
	}
	for _, d := range []struct {
		name string
		n    uint64
	}{
		{"dovetail_nodeclaims_launch_duration_seconds", test.HistogramCount(t, m.NodeClaimLaunchDuration, "pool-m")},
		{"dovetail_nodeclaims_registration_duration_seconds", test.HistogramCount(t, m.NodeClaimRegistrationDuration, "pool-m")},
		{"dovetail_nodeclaims_initialization_duration_seconds", test.HistogramCount(t, m.NodeClaimInitializationDuration, "pool-m")},
	} {
		if d.n != 1 {
			t.Errorf("%s{nodepool=pool-m} has %d observations, want 1", d.name, d.n)
		}
	}
}
