package counter

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

func withCapacity(nc *karpv1.NodeClaim, cpu, mem string) *karpv1.NodeClaim {
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return nc
}

// registered gives nc a Node name, allocatable resources and the offering labels a launch sets.
func registered(nc *karpv1.NodeClaim, node, instanceType, capacityType, zone string) *karpv1.NodeClaim {
	nc.Status.NodeName = node
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourcePods: resource.MustParse("29")}
	nc.Labels[corev1.LabelInstanceTypeStable] = instanceType
	nc.Labels[karpv1.CapacityTypeLabelKey] = capacityType
	nc.Labels[corev1.LabelTopologyZone] = zone
	nc.Labels[corev1.LabelArchStable] = "amd64"
	return nc
}

func TestCounter(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).WithObjects(
		test.NodePool("web").Limit(corev1.ResourceCPU, "100").Obj(),
		registered(withCapacity(test.NodeClaim("web-a", "web").Finalizer(karpv1.TerminationFinalizer).Obj(), "2", "4Gi"),
			"ip-10-0-0-1", "m5.large", "spot", "us-west-2a"),
		withCapacity(test.NodeClaim("web-b", "web").Finalizer(karpv1.TerminationFinalizer).Obj(), "4", "8Gi"),
		// Not launched yet: counts as a node without capacity.
		test.NodeClaim("web-c", "web").Finalizer(karpv1.TerminationFinalizer).Obj(),
		withCapacity(test.NodeClaim("other-a", "other").Finalizer(karpv1.TerminationFinalizer).Obj(), "8", "8Gi"),
	).Build()
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, Metrics: m})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "web"}}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "web"}, np); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range np.Status.Resources {
		got[string(k)] = v.String()
	}
	if diff := cmp.Diff(map[string]string{"cpu": "6", "memory": "12Gi", "nodes": "3"}, got); diff != "" {
		t.Errorf("status.resources (-want +got):\n%s", diff)
	}
	if np.Status.Nodes == nil || *np.Status.Nodes != 3 {
		t.Errorf("status.nodes = %v", np.Status.Nodes)
	}
	if v := testutil.ToFloat64(m.NodePoolUsage.WithLabelValues("web", "cpu")); v != 6 {
		t.Errorf("usage cpu = %v", v)
	}
	if v := testutil.ToFloat64(m.NodePoolLimit.WithLabelValues("web", "cpu")); v != 100 {
		t.Errorf("limit cpu = %v", v)
	}
	// Deleting the NodePool deletes its NodeClaims (only its own) and drops its metrics.
	if err := kube.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	list := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	deleting := map[string]bool{}
	for _, nc := range list.Items {
		deleting[nc.Name] = nc.DeletionTimestamp != nil
	}
	if diff := cmp.Diff(map[string]bool{"web-a": true, "web-b": true, "web-c": true, "other-a": false}, deleting); diff != "" {
		t.Errorf("deleting (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(m.NodePoolUsage); n != 0 {
		t.Errorf("usage series left after deletion: %d", n)
	}
}

// A NodeClaim update reaches the counter only when it changes what the counter reads: not when a pod event
// moves lastPodEventTime or a condition changes.
func TestCountedChange(t *testing.T) {
	base := registered(withCapacity(test.NodeClaim("web-a", "web").Obj(), "2", "4Gi"), "ip-10-0-0-1", "m5.large", "spot", "us-west-2a")
	change := func(f func(nc *karpv1.NodeClaim)) *karpv1.NodeClaim {
		nc := base.DeepCopy()
		f(nc)
		return nc
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		new  *karpv1.NodeClaim
		want bool
	}{
		{"last pod event", change(func(nc *karpv1.NodeClaim) { nc.Status.LastPodEventTime = now }), false},
		{"condition", change(func(nc *karpv1.NodeClaim) { nc.SetTrue(karpv1.ConditionTypeInitialized, "Initialized") }), false},
		{"capacity", change(func(nc *karpv1.NodeClaim) { nc.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4") }), true},
		{"allocatable", change(func(nc *karpv1.NodeClaim) { nc.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("58") }), true},
		{"node name", change(func(nc *karpv1.NodeClaim) { nc.Status.NodeName = "" }), true},
		{"label", change(func(nc *karpv1.NodeClaim) { nc.Labels[corev1.LabelTopologyZone] = "us-west-2b" }), true},
		{"deletion", change(func(nc *karpv1.NodeClaim) { nc.DeletionTimestamp = &now }), true},
	} {
		if got := countedChange(base, tc.new); got != tc.want {
			t.Errorf("%s: countedChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}
