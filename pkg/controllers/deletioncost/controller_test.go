package deletioncost_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deletioncost"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestReconcileWritesDeletionCosts: the pods of the node disruption would take first (the same price, fewer pods
// to move) get the lowest pod-deletion-cost; a pod a ReplicaSet does not control is not written; a second pass
// finds nothing to change. The writes and the nodes written are counted in Karpenter's metrics.
func TestReconcileWritesDeletionCosts(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	scheme, err := test.NewScheme(karpv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{test.NodePool("default").Obj()}
	for _, n := range []struct {
		name string
		pods int
	}{{"a", 3}, {"b", 1}} {
		nc := test.NodeClaim("nc-"+n.name, "default").ProviderID("fake:///" + n.name).NodeName("node-" + n.name).Initialized(now.Add(-time.Hour)).Obj()
		node := test.Node("node-"+n.name, "fake:///"+n.name).Offering("fake-large", fake.Zones[0], karpv1.CapacityTypeOnDemand).Ready(true).Obj()
		objs = append(objs, nc, node)
		for i := 0; i < n.pods; i++ {
			p := test.Pod(n.name+"-"+string(rune('0'+i))).Requests("100m", "100Mi").OwnedBy("apps/v1", "ReplicaSet", "web").NodeName(node.Name).Phase(corev1.PodRunning).Obj()
			objs = append(objs, p)
		}
	}
	// A pod of node-a that already holds the value node-a's pods get: not written, counted as unchanged.
	objs = append(objs, test.Pod("a-3").Requests("100m", "100Mi").OwnedBy("apps/v1", "ReplicaSet", "web").NodeName("node-a").
		Phase(corev1.PodRunning).Annotation(corev1.PodDeletionCost, "-1").Obj())
	bare := test.Pod("bare").Requests("100m", "100Mi").OwnedBy("v1", "ReplicationController", "rc").NodeName("node-b").Phase(corev1.PodRunning).Obj()
	objs = append(objs, bare)
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	s := &settings.Settings{}
	m := metrics.NewForTest()
	c := deletioncost.NewController(deps.Deps{Client: kube, CloudProvider: fake.New(clk), Clock: clk, Settings: s, Metrics: m})
	checkMetrics := func(when string, nodes map[string]float64, writes map[string]float64) {
		t.Helper()
		// The series as collected: reading them with WithLabelValues would make them.
		got := map[string]float64{}
		ch := make(chan prometheus.Metric, 16)
		m.DeletionCostNodesPending.Collect(ch)
		close(ch)
		for metric := range ch {
			var d dto.Metric
			if err := metric.Write(&d); err != nil {
				t.Fatal(err)
			}
			got[d.GetLabel()[0].GetValue()] = d.GetGauge().GetValue()
		}
		if d := cmp.Diff(nodes, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes (-want +got):\n%s", when, d)
		}
		gotWrites := map[string]float64{}
		for _, r := range []string{metrics.DeletionCostUpdated, metrics.DeletionCostUnchanged, metrics.DeletionCostNotFound, metrics.DeletionCostConflict, metrics.DeletionCostError} {
			if v := testutil.ToFloat64(m.DeletionCostWrites.WithLabelValues(r)); v != 0 {
				gotWrites[r] = v
			}
		}
		if d := cmp.Diff(writes, gotWrites, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: karpenter_pod_deletion_cost_pod_annotation_writes_total (-want +got):\n%s", when, d)
		}
	}

	res, err := c.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	costs := func() map[string]string {
		list := &corev1.PodList{}
		if err := kube.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range list.Items {
			out[p.Name] = p.Annotations[corev1.PodDeletionCost]
		}
		return out
	}
	// node-b holds a ReplicationController's pod: nothing recreates it elsewhere, as for Karpenter, so node-b is
	// not ranked and node-a is the only ranked node.
	want := map[string]string{"a-0": "-1", "a-1": "-1", "a-2": "-1", "a-3": "-1", "b-0": "", "bare": ""}
	if d := cmp.Diff(want, costs()); d != "" {
		t.Errorf("pod-deletion-cost (-want +got):\n%s", d)
	}
	if res.Updated != 3 || res.Unchanged != 1 {
		t.Errorf("updated %d pods and found %d unchanged, want 3 and 1", res.Updated, res.Unchanged)
	}
	checkMetrics("first pass", map[string]float64{"default": 1}, map[string]float64{"updated": 3, "skipped_unchanged": 1})

	if err := kube.Delete(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	// node-b now has one pod to move at node-a's price: it goes first.
	want = map[string]string{"a-0": "-1", "a-1": "-1", "a-2": "-1", "a-3": "-1", "b-0": "-2"}
	if d := cmp.Diff(want, costs()); d != "" {
		t.Errorf("after the pinning pod left, pod-deletion-cost (-want +got):\n%s", d)
	}
	checkMetrics("second pass", map[string]float64{"default": 1}, map[string]float64{"updated": 4, "skipped_unchanged": 1})
	res, err = c.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res != (deletioncost.Result{}) {
		t.Errorf("a pass over an unchanged cluster wrote %+v", res)
	}
	checkMetrics("third pass", nil, map[string]float64{"updated": 4, "skipped_unchanged": 1})
}
