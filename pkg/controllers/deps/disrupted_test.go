package deps_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestCountDisrupted: a disrupted NodeClaim is counted with its NodePool, capacity type, consolidation policy and
// termination mode, and the pods of its Node that must move (not its DaemonSet, terminal or other nodes' pods) in
// karpenter_pods_disruption_initiated_total with the same labels.
func TestCountDisrupted(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}).WithObjects(
		test.Pod("web-1").NodeName("node-a").Obj(),
		test.Pod("web-2").NodeName("node-a").Obj(),
		test.Pod("done").NodeName("node-a").Phase(corev1.PodSucceeded).Obj(),
		test.Pod("agent").NodeName("node-a").OwnedBy("apps/v1", "DaemonSet", "agent").Obj(),
		test.Pod("elsewhere").NodeName("node-b").Obj(),
	).Build()
	m := metrics.NewForTest()
	d := deps.Deps{Client: kube, Metrics: m}
	ctx := context.Background()

	graceful := test.NodeClaim("a", "default").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).Obj()
	graceful.Status.NodeName = "node-a"
	deps.CountDisrupted(ctx, d, graceful, "underutilized", metrics.ConsolidationPolicyLabel(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	eventual := test.NodeClaim("b", "default").TerminationGracePeriod(time.Hour).Obj()
	deps.CountDisrupted(ctx, d, eventual, "drifted", "")
	forceful := test.NodeClaim("c", "default").TerminationGracePeriod(0).Obj()
	deps.CountDisrupted(ctx, d, forceful, "expired", "")

	for _, tc := range []struct {
		labels      []string
		nodeClaims  float64
		initiatedBy float64
	}{
		{[]string{"underutilized", "default", karpv1.CapacityTypeSpot, "when_empty_or_underutilized", metrics.TerminationModeGraceful}, 1, 2},
		{[]string{"drifted", "default", "", "", metrics.TerminationModeEventual}, 1, 0},
		{[]string{"expired", "default", "", "", metrics.TerminationModeForceful}, 1, 0},
	} {
		if got := testutil.ToFloat64(m.NodeClaimsDisrupted.WithLabelValues(tc.labels...)); got != tc.nodeClaims {
			t.Errorf("karpenter_nodeclaims_disrupted_total%v = %v, want %v", tc.labels, got, tc.nodeClaims)
		}
		if got := testutil.ToFloat64(m.PodsDisruptionInitiated.WithLabelValues(tc.labels...)); got != tc.initiatedBy {
			t.Errorf("karpenter_pods_disruption_initiated_total%v = %v, want %v", tc.labels, got, tc.initiatedBy)
		}
	}
}

func TestConsolidationPolicyLabel(t *testing.T) {
	for policy, want := range map[karpv1.ConsolidationPolicy]string{
		karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized: "when_empty_or_underutilized",
		karpv1.ConsolidationPolicyWhenEmpty:                "when_empty",
		karpv1.ConsolidationPolicyBalanced:                 "balanced",
	} {
		if got := metrics.ConsolidationPolicyLabel(policy); got != want {
			t.Errorf("%s: %q, want %q", policy, got, want)
		}
	}
}
