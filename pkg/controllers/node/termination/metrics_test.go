package termination_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
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
	if got := testutil.ToFloat64(m.PodsEvictionRequests.WithLabelValues("429")); got != 1 {
		t.Errorf("karpenter_pods_eviction_requests_total{code=429} = %v, want 1 after one refused eviction", got)
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
		{"karpenter_pods_eviction_requests_total{code=429}", testutil.ToFloat64(m.PodsEvictionRequests.WithLabelValues("429")), 1},
		{"karpenter_pods_eviction_requests_total{code=200}", testutil.ToFloat64(m.PodsEvictionRequests.WithLabelValues("200")), 1},
		{"karpenter_nodes_drained_total{nodepool=default}", testutil.ToFloat64(m.NodesDrained.WithLabelValues("default")), 1},
		{"karpenter_nodes_terminated_total{nodepool=default}", testutil.ToFloat64(m.NodesTerminated), 1},
		{"karpenter_nodeclaims_terminated_total{nodepool=default}", testutil.ToFloat64(m.NodeClaimsTerminated), 1},
		{"karpenter_nodes_lifetime_duration_seconds{nodepool=default} observations",
			float64(test.HistogramCount(t, m.NodesLifetimeDuration, "default")), 1},
		{"karpenter_nodes_termination_duration_seconds{nodepool=default} observations",
			float64(test.SummaryCount(t, m.NodesTerminationDuration, "default")), 1},
		{"karpenter_nodeclaims_termination_duration_seconds{nodepool=default} observations",
			float64(test.HistogramCount(t, m.NodeClaimsTerminationDuration, "default")), 1},
		{"karpenter_nodeclaims_instance_termination_duration_seconds{nodepool=default} observations",
			float64(test.HistogramCount(t, m.NodeClaimsInstanceTerminationDuration, "default")), 1},
		{"operator_nodeclaim_status_condition_transitions_total{type=Drained,status=False,reason=Draining}",
			test.Sum(t, m.NodeClaimConditionTransitions, prometheus.Labels{"type": termination.ConditionTypeDrained, "status": "False", "reason": "Draining"}), 1},
		{"operator_nodeclaim_status_condition_transitions_total{type=Drained,status=True,reason=Drained}",
			test.Sum(t, m.NodeClaimConditionTransitions, prometheus.Labels{"type": termination.ConditionTypeDrained, "status": "True", "reason": "Drained"}), 1},
		{"operator_nodeclaim_status_condition_transitions_total{type=InstanceTerminating,status=True}",
			test.Sum(t, m.NodeClaimConditionTransitions, prometheus.Labels{"type": karpv1.ConditionTypeInstanceTerminating, "status": "True", "reason": "InstanceTerminating"}), 1},
		{"operator_nodeclaim_status_condition_transition_seconds{type=Drained,status=False} observations",
			test.Sum(t, m.NodeClaimConditionDuration, prometheus.Labels{"type": termination.ConditionTypeDrained, "status": "False"}), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// A node whose pods come back after its drain finished is drained again but counted once in
// karpenter_nodes_drained_total, also by a controller started after the pods came back (the mark that the node
// was drained lives in the NodeClaim's Drained condition, not in the controller). A VolumeAttachment keeps the
// node from terminating between the two drains.
func TestNodesDrainedCountsANodeOnce(t *testing.T) {
	h := newHarness(t)
	h.launch(nil)
	va := test.VolumeAttachmentFor(h.prefix+"va", h.prefix+"node", h.prefix+"pv")
	h.must(h.c.Create(h.ctx, va))
	h.pod(test.DrainPod("web"))
	h.deleteClaim()
	h.reconcileClaim()

	drained := func() float64 { return testutil.ToFloat64(h.metrics.NodesDrained.WithLabelValues("default")) }
	expect := func(step string, status metav1.ConditionStatus, reason string, count float64) {
		t.Helper()
		c := condition(h.getClaim(), termination.ConditionTypeDrained)
		if c == nil || c.Status != status || c.Reason != reason {
			t.Fatalf("%s: Drained condition = %+v, want %s/%s", step, c, status, reason)
		}
		if got := drained(); got != count {
			t.Errorf("%s: karpenter_nodes_drained_total{nodepool=default} = %v, want %v", step, got, count)
		}
	}

	h.reconcileNode()
	expect("first pass evicts web", metav1.ConditionFalse, "Draining", 0)
	h.reconcileNode()
	expect("drain finished", metav1.ConditionTrue, nodetermination.ReasonDrained, 1)

	h.pod(test.DrainPod("late"))
	h.reconcileNode()
	expect("pod came back", metav1.ConditionFalse, nodetermination.ReasonPodsReturned, 1)
	if c := condition(h.getClaim(), termination.ConditionTypeDrained); !strings.Contains(c.Message, h.ns+"/late") {
		t.Errorf("Drained message %q does not name the pod that came back", c.Message)
	}

	// A restarted controller (same metrics registry, no memory of the first drain).
	h.nodes = nodetermination.NewController(deps.Deps{Client: h.c, KubeClient: h.cs, CloudProvider: h.cloud,
		Clock: h.clock, Recorder: h.recorder, Metrics: h.metrics})
	h.reconcileNode()
	expect("drained again", metav1.ConditionTrue, nodetermination.ReasonDrained, 1)

	h.pod(test.DrainPod("later"))
	h.reconcileNode()
	expect("another pod came back", metav1.ConditionFalse, nodetermination.ReasonPodsReturned, 1)
	h.reconcileNode()
	expect("drained a third time", metav1.ConditionTrue, nodetermination.ReasonDrained, 1)

	h.must(h.c.Delete(h.ctx, va))
	h.settle(5)
	if got := drained(); got != 1 {
		t.Errorf("after termination: karpenter_nodes_drained_total{nodepool=default} = %v, want 1", got)
	}
}
