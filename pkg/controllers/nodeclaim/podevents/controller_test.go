package podevents

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

const timeout = 20 * time.Second

type harness struct {
	t   *testing.T
	env *test.ControllerEnv
	ctx context.Context
}

// newHarness starts envtest with a Dovetail node (node-a, NodeClaim claim-a) and a node without a NodeClaim
// (foreign). The fake clock starts on a whole second, as the API server stores times.
func newHarness(t *testing.T, controllers ...func(deps.Deps) test.Registrar) *harness {
	env := test.StartControllerEnv(t, controllers...)
	env.Clock.SetTime(env.Clock.Now().Truncate(time.Second))
	h := &harness{t: t, env: env, ctx: context.Background()}
	const providerID = "fake:///zone-a/i-a"
	h.create(test.Node("node-a", providerID).Obj())
	h.create(test.Node("foreign", "other:///foreign").Obj())
	nc := test.NodeClaim("claim-a", "default").Obj()
	h.create(nc)
	nc.Status.ProviderID, nc.Status.NodeName = providerID, "node-a"
	if err := env.Env.Client.Status().Update(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	// The controller finds the NodeClaim through the cache's provider ID index: wait until it is there.
	test.Eventually(t, timeout, func() (bool, string) {
		list := &karpv1.NodeClaimList{}
		if err := env.Client.List(h.ctx, list); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 1 && list.Items[0].Status.ProviderID == providerID, "nodeclaim not in the cache yet"
	})
	return h
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.env.Env.Client.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (h *harness) claim() *karpv1.NodeClaim {
	h.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "claim-a"}, nc); err != nil {
		h.t.Fatal(err)
	}
	return nc
}

// waitForEventTime polls the NodeClaim until its lastPodEventTime is want.
func (h *harness) waitForEventTime(want time.Time) {
	h.t.Helper()
	test.Eventually(h.t, timeout, func() (bool, string) {
		got := h.claim().Status.LastPodEventTime.Time
		return got.Equal(want), "lastPodEventTime " + got.String() + ", want " + want.String()
	})
}

func (h *harness) bind(pod, node string) {
	h.t.Helper()
	err := h.env.Deps.KubeClient.CoreV1().Pods("default").Bind(h.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("binding pod %s to %s: %v", pod, node, err)
	}
}

func TestPodEventsRecordedOnTheNodeClaim(t *testing.T) {
	h := newHarness(t, func(d deps.Deps) test.Registrar { return NewController(d) })
	clk := h.env.Clock
	if got := h.claim().Status.LastPodEventTime; !got.IsZero() {
		t.Fatalf("lastPodEventTime before any pod event = %v", got)
	}

	// A pod bound by the scheduler.
	h.create(test.Pod("web").Obj())
	clk.Step(time.Minute)
	h.bind("web", "node-a")
	h.waitForEventTime(clk.Now())

	// A pod created already bound.
	clk.Step(time.Minute)
	h.create(test.Pod("mirror").NodeName("node-a").Obj())
	h.waitForEventTime(clk.Now())

	// A bound pod finishes.
	clk.Step(time.Minute)
	pod := &corev1.Pod{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Namespace: "default", Name: "mirror"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if err := h.env.Env.Client.Status().Update(h.ctx, pod); err != nil {
		t.Fatal(err)
	}
	h.waitForEventTime(clk.Now())

	// A bound pod is deleted.
	clk.Step(time.Minute)
	if err := h.env.Env.Client.Delete(h.ctx, test.Pod("web").Obj(), &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	h.waitForEventTime(clk.Now())
}

func TestPodEventsDeduplicated(t *testing.T) {
	h := newHarness(t)
	c := NewController(h.env.Deps)
	clk := h.env.Clock
	reconcileNode := func() {
		t.Helper()
		if _, err := c.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "node-a"}}); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}
	first := clk.Now()
	reconcileNode()
	h.waitForEventTime(first)
	// Let the cache see the write, as it would before the next event in practice.
	test.Eventually(t, timeout, func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		if err := h.env.Client.Get(h.ctx, client.ObjectKey{Name: "claim-a"}, nc); err != nil {
			return false, err.Error()
		}
		return nc.Status.LastPodEventTime.Time.Equal(first), "cache has not seen the first pod event"
	})
	version := h.claim().ResourceVersion

	clk.Step(4 * time.Second)
	reconcileNode()
	if nc := h.claim(); nc.ResourceVersion != version || !nc.Status.LastPodEventTime.Time.Equal(first) {
		t.Errorf("event 4s later was written: lastPodEventTime %v (resourceVersion %s -> %s), want %v unchanged",
			nc.Status.LastPodEventTime, version, nc.ResourceVersion, first)
	}

	clk.Step(time.Second)
	reconcileNode()
	h.waitForEventTime(clk.Now())

	// A node without a NodeClaim, and one that does not exist: nothing to do, no error, no write.
	version = h.claim().ResourceVersion
	clk.Step(time.Minute)
	for _, node := range []string{"foreign", "gone"} {
		if _, err := c.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node}}); err != nil {
			t.Errorf("reconcile %s: %v", node, err)
		}
	}
	if nc := h.claim(); nc.ResourceVersion != version {
		t.Errorf("a pod event on another node changed claim-a: lastPodEventTime %v", nc.Status.LastPodEventTime)
	}
}
