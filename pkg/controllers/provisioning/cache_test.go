package provisioning_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPassLeavesBoundPodsAlone: the provisioner reads every pod from the cache (the informer's store, not even a
// list's struct copies) and copies only the pending ones, which it nominates. After passes that plan pending pods onto a registered node (and
// nominate them) and onto new NodeClaims, every bound pod in the cache is as it was.
func TestPassLeavesBoundPodsAlone(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	c := e.Env.Client
	if err := c.Create(ctx, test.NodePool("default").Obj()); err != nil {
		t.Fatal(err)
	}
	node := test.Node("worker", "fake:///worker").Ready(true).Capacity(corev1.ResourceCPU, "6").Capacity(corev1.ResourceMemory, "64Gi").
		Label(karpv1.NodePoolLabelKey, "default").Label(corev1.LabelTopologyZone, "test-zone-a").Obj()
	status := node.Status
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = status
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = nil
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		p := test.Pod(fmt.Sprintf("bound-%d", i)).Requests("1", "1Gi").Label("app", "web").Obj()
		p.Spec.NodeName = "worker"
		p.Spec.Tolerations = []corev1.Toleration{{Key: "b", Operator: corev1.TolerationOpExists}, {Key: "a", Operator: corev1.TolerationOpExists}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for i, cpu := range []string{"1500m", "3"} { // one fits the worker, one needs a new node
		p := test.Pod(fmt.Sprintf("pending-%d", i)).Requests(cpu, "1Gi").Label("app", "web").Obj()
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Status = test.Pod("x").Unschedulable().Obj().Status
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	test.Eventually(t, 20e9, func() (bool, string) {
		l := &corev1.PodList{}
		if err := e.Client.List(ctx, l); err != nil {
			return false, err.Error()
		}
		n := 0
		for i := range l.Items {
			if l.Items[i].Status.Phase == corev1.PodRunning || len(l.Items[i].Status.Conditions) > 0 {
				n++
			}
		}
		return n == 6 && e.Client.Get(ctx, client.ObjectKey{Name: "worker"}, &corev1.Node{}) == nil, fmt.Sprintf("%d of 6 pods cached", n)
	})
	before := boundPods(t, e)
	nodesBefore := cachedNodes(t, e)
	// With the manager's cache, as the controller runs: the pass walks the informer's own pod objects.
	d := e.Deps
	d.Cache = e.Manager.GetCache()
	ctrl := provisioning.NewController(d)
	if err := ctrl.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	// The second pass sees the first one's NodeClaim in flight (from the cache once it shows it).
	test.Eventually(t, 20e9, func() (bool, string) {
		l := &karpv1.NodeClaimList{}
		if err := e.Client.List(ctx, l); err != nil {
			return false, err.Error()
		}
		return len(l.Items) > 0, "the cache shows no NodeClaim yet"
	})
	claimsBefore := cachedNodeClaims(t, e)
	if err := ctrl.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) == 0 {
		t.Fatal("the passes created no NodeClaim: the test does not test anything")
	}
	if diff := cmp.Diff(before, boundPods(t, e)); diff != "" {
		t.Errorf("bound pods in the cache changed by the passes (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(nodesBefore, cachedNodes(t, e)); diff != "" {
		t.Errorf("nodes in the cache changed by the passes (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(claimsBefore, cachedNodeClaims(t, e)); diff != "" {
		t.Errorf("nodeclaims in the cache changed by the second pass (-before +after):\n%s", diff)
	}
}

// cachedNodes returns deep copies of the Nodes as the cache holds them.
func cachedNodes(t *testing.T, e *test.ControllerEnv) []corev1.Node {
	t.Helper()
	l := &corev1.NodeList{}
	if err := e.Client.List(context.Background(), l, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	out := make([]corev1.Node, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, *l.Items[i].DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// cachedNodeClaims returns deep copies of the NodeClaims as the cache holds them.
func cachedNodeClaims(t *testing.T, e *test.ControllerEnv) []karpv1.NodeClaim {
	t.Helper()
	l := &karpv1.NodeClaimList{}
	if err := e.Client.List(context.Background(), l, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	out := make([]karpv1.NodeClaim, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, *l.Items[i].DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// boundPods returns deep copies of the bound pods as the cache holds them.
func boundPods(t *testing.T, e *test.ControllerEnv) []corev1.Pod {
	t.Helper()
	l := &corev1.PodList{}
	if err := e.Client.List(context.Background(), l, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for i := range l.Items {
		if l.Items[i].Spec.NodeName != "" {
			out = append(out, *l.Items[i].DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
