package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

const timeout = 20 * time.Second

type harness struct {
	t   *testing.T
	env *test.ControllerEnv
	c   *Controller
	ctx context.Context
}

func newHarness(t *testing.T) *harness {
	env := test.StartControllerEnv(t)
	return &harness{t: t, env: env, c: NewController(env.Deps), ctx: context.Background()}
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.env.Env.Client.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// reconcileUntil runs a launch worker's pass and a lifecycle worker's pass, as the registered controllers do
// (ignoring transient errors such as stale-cache conflicts), until check holds on the NodeClaim read from the
// API server.
func (h *harness) reconcileUntil(name string, check func(nc *karpv1.NodeClaim) (bool, string)) *karpv1.NodeClaim {
	h.t.Helper()
	var last *karpv1.NodeClaim
	test.Eventually(h.t, timeout, func() (bool, string) {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
		_, _ = h.c.ReconcileLaunch(h.ctx, req)
		_, _ = h.c.ReconcileLaunched(h.ctx, req)
		nc := &karpv1.NodeClaim{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err.Error()
		}
		last = nc
		return check(nc)
	})
	return last
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	n := &corev1.Node{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: name}, n); err != nil {
		h.t.Fatalf("getting node: %v", err)
	}
	return n
}

// updateNode applies mutate to a fresh copy of the node (spec and metadata, then status).
func (h *harness) updateNode(name string, mutate func(n *corev1.Node)) {
	h.t.Helper()
	n := h.node(name)
	mutate(n)
	status := n.Status.DeepCopy()
	if err := h.env.Env.Client.Update(h.ctx, n); err != nil {
		h.t.Fatalf("updating node: %v", err)
	}
	n.Status = *status
	if err := h.env.Env.Client.Status().Update(h.ctx, n); err != nil {
		h.t.Fatalf("updating node status: %v", err)
	}
}

func condition(nc *karpv1.NodeClaim, t string) (bool, string) {
	c := nc.GetCondition(t)
	if c == nil {
		return false, t + " not set"
	}
	return c.Status == metav1.ConditionTrue, fmt.Sprintf("%s=%s %s: %s", t, c.Status, c.Reason, c.Message)
}

func conditionIs(t string, status metav1.ConditionStatus, reason, message string) func(*karpv1.NodeClaim) (bool, string) {
	return func(nc *karpv1.NodeClaim) (bool, string) {
		c := nc.GetCondition(t)
		if c == nil {
			return false, t + " not set"
		}
		got := fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		want := fmt.Sprintf("%s %s %s", status, reason, message)
		return got == want, "got " + got + ", want " + want
	}
}

// taintKeys lists key:effect of the node's taints, leaving out node.kubernetes.io/not-ready, which the API
// server's admission adds to every new Node.
func taintKeys(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			continue
		}
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

// markReady makes the node Ready, as its kubelet reports, and drops the not-ready taint, as the node lifecycle
// controller then does.
func (h *harness) markReady(name string) {
	h.t.Helper()
	h.updateNode(name, func(n *corev1.Node) {
		n.Status.Conditions = test.Node("x", "").Ready(true).Obj().Status.Conditions
		var kept []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				kept = append(kept, t)
			}
		}
		n.Spec.Taints = kept
	})
}

func hasEvent(h *harness, reason string) bool {
	for {
		select {
		case e := <-h.env.Recorder.Events:
			if strings.Contains(e, reason) {
				return true
			}
		default:
			return false
		}
	}
}

// hasEventMessage reports whether an event with the reason and a message containing msg was recorded (it drains
// the recorder, like hasEvent).
func hasEventMessage(h *harness, reason, msg string) bool {
	for {
		select {
		case e := <-h.env.Recorder.Events:
			if strings.Contains(e, reason) && strings.Contains(e, msg) {
				return true
			}
		default:
			return false
		}
	}
}

func TestLifecycleLaunchRegisterInitialize(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("gpu-claim", "default").
		Taint("team", "a", corev1.TaintEffectNoSchedule).
		StartupTaint("example.com/startup", "true", corev1.TaintEffectNoSchedule).
		Requests(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}).Obj())

	nc := h.reconcileUntil("gpu-claim", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	if got := nc.Labels[corev1.LabelInstanceTypeStable]; got != "fake-gpu" {
		t.Errorf("instance type label = %q, want fake-gpu", got)
	}
	if nc.Status.ProviderID == "" || len(nc.Finalizers) == 0 || nc.Finalizers[0] != karpv1.TerminationFinalizer {
		t.Errorf("launched nodeclaim: providerID %q finalizers %v", nc.Status.ProviderID, nc.Finalizers)
	}
	nc = h.reconcileUntil("gpu-claim", conditionIs(karpv1.ConditionTypeRegistered, metav1.ConditionFalse, karpv1.ReasonNodeNotFound,
		"waiting for a Node with providerID "+nc.Status.ProviderID+" to join the cluster"))

	h.create(test.Node("gpu-node", nc.Status.ProviderID).
		Taint(karpv1.UnregisteredNoExecuteTaint()).Taint(karpv1.CloudProviderUninitializedTaint()).Obj())
	nc = h.reconcileUntil("gpu-claim", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) })
	if nc.Status.NodeName != "gpu-node" {
		t.Errorf("status.nodeName = %q", nc.Status.NodeName)
	}
	node := h.node("gpu-node")
	wantTaints := []string{"node.cloudprovider.kubernetes.io/uninitialized:NoSchedule", "team:NoSchedule", "example.com/startup:NoSchedule"}
	if diff := cmp.Diff(wantTaints, taintKeys(node)); diff != "" {
		t.Errorf("node taints after registration (-want +got):\n%s", diff)
	}
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || node.Labels[karpv1.NodePoolLabelKey] != "default" {
		t.Errorf("node labels %v", node.Labels)
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].Name != "gpu-claim" || len(node.Finalizers) != 1 {
		t.Errorf("node owner %v finalizers %v", node.OwnerReferences, node.Finalizers)
	}

	h.reconcileUntil("gpu-claim", conditionIs(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.ReasonNodeNotReady, "Node gpu-node is not Ready"))
	h.markReady("gpu-node")
	h.reconcileUntil("gpu-claim", conditionIs(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.ReasonStartupTaintsExist,
		"Node gpu-node still has taint(s) example.com/startup=true:NoSchedule, node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule"))
	h.updateNode("gpu-node", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	})
	h.reconcileUntil("gpu-claim", conditionIs(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.ReasonResourcesNotReady,
		"Node gpu-node has not registered resource(s) nvidia.com/gpu"))
	h.updateNode("gpu-node", func(n *corev1.Node) {
		n.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("1")
		n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	})
	nc = h.reconcileUntil("gpu-claim", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeReady) })
	if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
		t.Errorf("Ready without Initialized: %v", nc.Status.Conditions)
	}
	if got := h.node("gpu-node").Labels[karpv1.NodeInitializedLabelKey]; got != "true" {
		t.Errorf("initialized label = %q", got)
	}
	// The startup taint, once removed by its daemon, is not put back.
	if diff := cmp.Diff([]string{"team:NoSchedule"}, taintKeys(h.node("gpu-node"))); diff != "" {
		t.Errorf("taints after initialization (-want +got):\n%s", diff)
	}
}

// TestTaintSyncNeverKeepsUninitialized covers both orders of registration and the cloud controller manager
// removing its taint, plus a registration attempt computed from a stale copy of the Node.
func TestTaintSyncNeverKeepsUninitialized(t *testing.T) {
	h := newHarness(t)
	launch := func(name string) *karpv1.NodeClaim {
		h.create(test.NodeClaim(name, "default").Taint("team", "a", corev1.TaintEffectNoSchedule).Obj())
		return h.reconcileUntil(name, func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	}
	removeUninitialized := func(node string) {
		h.updateNode(node, func(n *corev1.Node) {
			var kept []corev1.Taint
			for _, t := range n.Spec.Taints {
				if t.Key != karpv1.CloudProviderUninitializedTaintKey {
					kept = append(kept, t)
				}
			}
			n.Spec.Taints = kept
		})
	}
	registered := func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) }

	t.Run("ccm first, then registration", func(t *testing.T) {
		nc := launch("order-a")
		h.create(test.Node("node-a", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Taint(karpv1.CloudProviderUninitializedTaint()).Obj())
		removeUninitialized("node-a")
		h.reconcileUntil("order-a", registered)
		if diff := cmp.Diff([]string{"team:NoSchedule"}, taintKeys(h.node("node-a"))); diff != "" {
			t.Errorf("taints (-want +got):\n%s", diff)
		}
	})
	t.Run("registration first, then ccm", func(t *testing.T) {
		nc := launch("order-b")
		h.create(test.Node("node-b", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Taint(karpv1.CloudProviderUninitializedTaint()).Obj())
		h.reconcileUntil("order-b", registered)
		if diff := cmp.Diff([]string{"node.cloudprovider.kubernetes.io/uninitialized:NoSchedule", "team:NoSchedule"}, taintKeys(h.node("node-b"))); diff != "" {
			t.Errorf("taints right after registration (-want +got):\n%s", diff)
		}
		removeUninitialized("node-b")
		for i := 0; i < 5; i++ {
			_, _ = h.c.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "order-b"}})
		}
		if diff := cmp.Diff([]string{"team:NoSchedule"}, taintKeys(h.node("node-b"))); diff != "" {
			t.Errorf("taints after the ccm removed its taint (-want +got):\n%s", diff)
		}
	})
	t.Run("stale node copy is rejected, not written back", func(t *testing.T) {
		nc := launch("order-c")
		h.create(test.Node("node-c", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Taint(karpv1.CloudProviderUninitializedTaint()).Obj())
		stale := h.node("node-c")
		removeUninitialized("node-c")
		// The patch computed from the stale copy touches only the taints registration changes (it removes the
		// unregistered taint and adds the NodeClaim's), so it goes through at once, without writing back the taint
		// the stale copy still had.
		var patches []string
		d := h.env.Deps
		d.APIReader = h.env.Env.Client
		d.Client = interceptor.NewClient(noWatch{h.env.Deps.Client}, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				err := c.Patch(ctx, obj, patch, opts...)
				patches = append(patches, fmt.Sprintf("%s stale=%t", obj.GetName(), isStale(err)))
				return err
			},
		})
		if err := NewController(d).syncNode(h.ctx, nc, stale); err != nil {
			t.Fatalf("syncNode on a stale copy: %v", err)
		}
		if diff := cmp.Diff([]string{"node-c stale=false"}, patches); diff != "" {
			t.Errorf("patches (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"team:NoSchedule"}, taintKeys(h.node("node-c"))); diff != "" {
			t.Errorf("taints after the stale sync (-want +got):\n%s", diff)
		}
		h.reconcileUntil("order-c", registered)
		if diff := cmp.Diff([]string{"team:NoSchedule"}, taintKeys(h.node("node-c"))); diff != "" {
			t.Errorf("taints after registration (-want +got):\n%s", diff)
		}
	})
	t.Run("a copy behind only by the kubelet's status writes is patched at once", func(t *testing.T) {
		nc := launch("order-e")
		h.create(test.Node("node-e", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
		behind := h.node("node-e")
		// A heartbeat and someone's label move the Node's resourceVersion; its taints stay.
		h.updateNode("node-e", func(n *corev1.Node) {
			n.Labels["example.com/other"] = "x"
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "Heartbeat", Status: corev1.ConditionTrue})
		})
		var patches int
		d := h.env.Deps
		d.APIReader = h.env.Env.Client
		d.Client = interceptor.NewClient(noWatch{h.env.Deps.Client}, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				patches++
				return c.Patch(ctx, obj, patch, opts...)
			},
		})
		if err := NewController(d).syncNode(h.ctx, nc, behind); err != nil {
			t.Fatalf("syncNode: %v", err)
		}
		if patches != 1 {
			t.Errorf("%d patches, want 1", patches)
		}
		got := h.node("node-e")
		if diff := cmp.Diff([]string{"team:NoSchedule"}, taintKeys(got)); diff != "" {
			t.Errorf("taints (-want +got):\n%s", diff)
		}
		if got.Labels["example.com/other"] != "x" || got.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
			t.Errorf("labels %v: want the other writer's and karpenter.sh/registered", got.Labels)
		}
		if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != nc.UID {
			t.Errorf("owner references %v, want the NodeClaim", got.OwnerReferences)
		}
	})
	t.Run("uninitialized in the nodeclaim's taints is never added", func(t *testing.T) {
		h.create(test.NodeClaim("order-d", "default").Taint(karpv1.CloudProviderUninitializedTaintKey, "true", corev1.TaintEffectNoSchedule).Obj())
		nc := h.reconcileUntil("order-d", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
		h.create(test.Node("node-d", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
		h.reconcileUntil("order-d", registered)
		if diff := cmp.Diff([]string(nil), taintKeys(h.node("node-d"))); diff != "" {
			t.Errorf("taints (-want +got):\n%s", diff)
		}
	})
}

func TestRegistrationTimeout(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("late", "default").Obj())
	h.reconcileUntil("late", conditionIs(karpv1.ConditionTypeRegistered, metav1.ConditionFalse, karpv1.ReasonNodeNotFound, ""+
		"waiting for a Node with providerID fake:///test-zone-a/i-00000000000000001 to join the cluster"))
	h.env.Clock.Step(14 * time.Minute)
	nc := h.reconcileUntil("late", func(nc *karpv1.NodeClaim) (bool, string) { return true, "" })
	if !nc.DeletionTimestamp.IsZero() {
		t.Fatal("nodeclaim deleted before the registration timeout")
	}
	h.env.Clock.Step(2 * time.Minute)
	h.reconcileUntil("late", func(nc *karpv1.NodeClaim) (bool, string) {
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim not deleted after 16 minutes"
	})
	if !hasEvent(h, karpv1.ReasonRegistrationTimeout) {
		t.Error("no RegistrationTimeout event")
	}
}

// REGISTRATION_TIMEOUT replaces the 15 min default, and the event names it.
func TestRegistrationTimeoutSetting(t *testing.T) {
	h := newHarness(t)
	h.env.Deps.Settings.RegistrationTimeout = 90 * time.Second
	h.create(test.NodeClaim("slow", "default").Obj())
	h.reconcileUntil("slow", conditionIs(karpv1.ConditionTypeRegistered, metav1.ConditionFalse, karpv1.ReasonNodeNotFound, ""+
		"waiting for a Node with providerID fake:///test-zone-a/i-00000000000000001 to join the cluster"))
	h.env.Clock.Step(80 * time.Second)
	nc := h.reconcileUntil("slow", func(nc *karpv1.NodeClaim) (bool, string) { return true, "" })
	if !nc.DeletionTimestamp.IsZero() {
		t.Fatal("nodeclaim deleted 80s after launch with a 90s registration timeout")
	}
	// The fake clock started before the NodeClaim was created (real time), so step well past the timeout.
	h.env.Clock.Step(40 * time.Second)
	h.reconcileUntil("slow", func(nc *karpv1.NodeClaim) (bool, string) {
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim not deleted 120s after launch with a 90s registration timeout"
	})
	if !hasEventMessage(h, karpv1.ReasonRegistrationTimeout, "registered within 1m30s") {
		t.Error("no RegistrationTimeout event naming the 1m30s timeout")
	}
}

func TestLaunchFailures(t *testing.T) {
	h := newHarness(t)
	t.Run("insufficient capacity deletes the nodeclaim", func(t *testing.T) {
		for _, z := range []string{"test-zone-a", "test-zone-b", "test-zone-c"} {
			for _, ct := range []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand} {
				h.env.Cloud.SetUnavailable("fake-small", z, ct, true)
			}
		}
		h.create(test.NodeClaim("ice", "default").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "fake-small").Obj())
		h.reconcileUntil("ice", func(nc *karpv1.NodeClaim) (bool, string) {
			return !nc.DeletionTimestamp.IsZero(), "not deleted"
		})
		if !hasEvent(h, "InsufficientCapacityError") {
			t.Error("no InsufficientCapacityError event")
		}
	})
	t.Run("node class not ready keeps the nodeclaim", func(t *testing.T) {
		h.env.Cloud.InjectError("Create", cloudprovider.NewNodeClassNotReadyError(errors.New("EC2NodeClass default has no subnets")))
		h.create(test.NodeClaim("waiting", "default").Obj())
		nc := h.reconcileUntil("waiting", conditionIs(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, karpv1.ReasonNodeClassNotReady,
			"node class not ready: EC2NodeClass default has no subnets"))
		if !nc.DeletionTimestamp.IsZero() {
			t.Error("nodeclaim deleted")
		}
		// The next attempt succeeds.
		h.reconcileUntil("waiting", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	})
	t.Run("throttling is retried later, not a launch failure", func(t *testing.T) {
		h.env.Cloud.InjectError("Create", cloudprovider.NewThrottledError(errors.New("RequestLimitExceeded: Request limit exceeded")))
		h.create(test.NodeClaim("throttled", "default").Obj())
		// As registered by the operator: the throttled reconcile is requeued, and returns no error to be logged.
		r := deps.RetryTransient(h.c)
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "throttled"}}
		test.Eventually(t, timeout, func() (bool, string) {
			res, err := r.Reconcile(h.ctx, req)
			if err != nil {
				return false, "Reconcile returned " + err.Error()
			}
			return res.RequeueAfter >= deps.ThrottleRequeue, fmt.Sprintf("result %+v", res)
		})
		nc := &karpv1.NodeClaim{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "throttled"}, nc); err != nil {
			t.Fatal(err)
		}
		if c := nc.GetCondition(karpv1.ConditionTypeLaunched); c != nil && c.Reason == karpv1.ReasonLaunchFailed {
			t.Errorf("a throttled launch was recorded as a failure: %+v", c)
		}
		if hasEvent(h, "LaunchFailed") {
			t.Error("LaunchFailed event for a throttled launch")
		}
		h.reconcileUntil("throttled", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	})
}

// A pass that reads the NodeClaim from a cache that has not seen its launch yet must neither launch again nor
// write over the recorded launch.
func TestStaleCacheDoesNotRelaunch(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("stale-claim", "default").Obj())
	stale := &karpv1.NodeClaim{}
	test.Eventually(t, timeout, func() (bool, string) {
		err := h.env.Client.Get(h.ctx, client.ObjectKey{Name: "stale-claim"}, stale)
		return err == nil, fmt.Sprint(err)
	})
	launched := h.reconcileUntil("stale-claim", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })

	for range 3 {
		res, done, err := h.c.launch(h.ctx, stale.DeepCopy())
		if err != nil || !done || res.RequeueAfter == 0 {
			t.Errorf("launch(stale copy) = %+v, %v, %v; want to wait for the cache", res, done, err)
		}
	}
	if n := len(h.env.Cloud.Created()); n != 1 {
		t.Errorf("%d Create calls, want 1", n)
	}
	nc := &karpv1.NodeClaim{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "stale-claim"}, nc); err != nil {
		t.Fatal(err)
	}
	if nc.Status.ProviderID != launched.Status.ProviderID {
		t.Errorf("providerID %q, want %q", nc.Status.ProviderID, launched.Status.ProviderID)
	}
	// Once the launch is in the cache the memo lets go of it.
	h.reconcileUntil("stale-claim", func(*karpv1.NodeClaim) (bool, string) {
		_, w := h.c.launches.get(stale)
		return w.at.IsZero(), "launch still remembered"
	})
}

// When a NodeClaim's Node registers, the pods the provisioner planned on the NodeClaim are nominated for the
// Node; a pod nominated elsewhere by someone else keeps its nomination, and of two pods of a zone spread with
// maxSkew 1 only the first is (the kube-scheduler would count each against the other on that Node).
func TestRegistrationNominatesPlannedPods(t *testing.T) {
	h := newHarness(t)
	planned := test.Pod("planned").Obj()
	foreign := test.Pod("foreign").Obj()
	spread := func(name string) *corev1.Pod {
		return test.Pod(name).Label("app", "web").
			Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "web"}).Obj()
	}
	spread1, spread2 := spread("spread-1"), spread("spread-2")
	h.create(planned)
	h.create(foreign)
	h.create(spread1)
	h.create(spread2)
	foreign.Status.NominatedNodeName = "elsewhere"
	if err := h.env.Env.Client.Status().Update(h.ctx, foreign); err != nil {
		t.Fatal(err)
	}
	h.create(test.NodeClaim("nominating", "default").Obj())
	nc := h.reconcileUntil("nominating", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.env.Deps.Plans.SetPlanned(map[string][]deps.PodRef{"nominating": {
		{Namespace: planned.Namespace, Name: planned.Name, UID: planned.UID},
		{Namespace: foreign.Namespace, Name: foreign.Name, UID: foreign.UID},
		{Namespace: spread1.Namespace, Name: spread1.Name, UID: spread1.UID},
		{Namespace: spread2.Namespace, Name: spread2.Name, UID: spread2.UID},
	}})
	h.create(test.Node("nominated-node", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	h.reconcileUntil("nominating", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) })

	got := map[string]string{}
	for _, name := range []string{"planned", "foreign", "spread-1", "spread-2"} {
		p := &corev1.Pod{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		got[name] = p.Status.NominatedNodeName
	}
	want := map[string]string{"planned": "nominated-node", "foreign": "elsewhere", "spread-1": "nominated-node", "spread-2": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("nominations (-want +got):\n%s", d)
	}
	if n := h.env.Deps.Plans.Nominated()[planned.UID]; n != "nominated-node" {
		t.Errorf("recorded nomination %q", n)
	}
}

// With the nomination budget spent on other nodes (deps.NominationBudget), a registering Node gets no
// nominations: the pods planned there go where the kube-scheduler puts them, or are nominated by a later pass.
func TestRegistrationNominatesNothingPastTheBudget(t *testing.T) {
	h := newHarness(t)
	planned := test.Pod("planned-past-budget").Obj()
	h.create(planned)
	h.env.Deps.Plans.SetNominationBudget(1)
	h.env.Deps.Plans.UpdateNominated(map[types.UID]string{"uid-elsewhere": "other-node"})
	h.create(test.NodeClaim("over-budget", "default").Obj())
	nc := h.reconcileUntil("over-budget", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.env.Deps.Plans.SetPlanned(map[string][]deps.PodRef{"over-budget": {{Namespace: planned.Namespace, Name: planned.Name, UID: planned.UID}}})
	h.create(test.Node("over-budget-node", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	h.reconcileUntil("over-budget", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) })
	p := &corev1.Pod{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKeyFromObject(planned), p); err != nil {
		t.Fatal(err)
	}
	if p.Status.NominatedNodeName != "" {
		t.Errorf("pod nominated for %q past the budget", p.Status.NominatedNodeName)
	}
	if _, ok := h.env.Deps.Plans.Nominated()[planned.UID]; ok {
		t.Error("a nomination past the budget was recorded")
	}
}

// A 1.34 kube-scheduler clears a pod's nomination when an attempt to place it fails, which the nomination itself
// can cause while the Node still has the unregistered taint: registration nominates the planned pods again once
// the Node is schedulable.
func TestRegistrationNominatesAgainAfterTheTaintIsLifted(t *testing.T) {
	h := newHarness(t)
	planned := test.Pod("cleared").Obj()
	h.create(planned)
	api := h.env.Env.Client
	// The "scheduler" clears the nomination just before the Node loses its unregistered taint.
	d := h.env.Deps
	d.APIReader = api
	d.Client = test.Intercept(d.Client, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				p := &corev1.Pod{}
				if err := api.Get(ctx, client.ObjectKeyFromObject(planned), p); err != nil {
					return err
				}
				if p.Status.NominatedNodeName != "" {
					p.Status.NominatedNodeName = ""
					if err := api.Status().Update(ctx, p); err != nil {
						return err
					}
				}
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	})
	h.c = NewController(d)
	h.create(test.NodeClaim("renominating", "default").Obj())
	nc := h.reconcileUntil("renominating", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.env.Deps.Plans.SetPlanned(map[string][]deps.PodRef{"renominating": {{Namespace: planned.Namespace, Name: planned.Name, UID: planned.UID}}})
	h.create(test.Node("renominated-node", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	h.reconcileUntil("renominating", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) })
	test.Eventually(t, timeout, func() (bool, string) {
		p := &corev1.Pod{}
		if err := api.Get(h.ctx, client.ObjectKeyFromObject(planned), p); err != nil {
			return false, err.Error()
		}
		return p.Status.NominatedNodeName == "renominated-node", fmt.Sprintf("nominated for %q", p.Status.NominatedNodeName)
	})
}

// The registered controllers split the lifecycle: the launch workers only launch, and the lifecycle workers
// leave a NodeClaim not launched yet alone and take it on from its launch.
func TestLaunchAndLifecycleWorkersSplitTheWork(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("split", "default").Obj())
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "split"}}
	get := func() *karpv1.NodeClaim {
		t.Helper()
		nc := &karpv1.NodeClaim{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "split"}, nc); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	// The NodeClaim is in the cache once its finalizer-less copy can be read through it.
	test.Eventually(t, timeout, func() (bool, string) {
		err := h.env.Deps.Client.Get(h.ctx, client.ObjectKey{Name: "split"}, &karpv1.NodeClaim{})
		return err == nil, fmt.Sprint(err)
	})
	for range 3 {
		if _, err := h.c.ReconcileLaunched(h.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.env.Cloud.Created()); n != 0 {
		t.Fatalf("a lifecycle worker launched %d instances", n)
	}
	// Not even the finalizer: written by both kinds of workers, one write met a stale copy and its conflict
	// backoff delayed the launch.
	if nc := get(); len(nc.Finalizers) != 0 || len(nc.Status.Conditions) != 0 {
		t.Fatalf("a lifecycle worker touched a NodeClaim not launched yet: finalizers %v, conditions %v", nc.Finalizers, nc.Status.Conditions)
	}
	test.Eventually(t, timeout, func() (bool, string) {
		_, _ = h.c.ReconcileLaunch(h.ctx, req)
		return condition(get(), karpv1.ConditionTypeLaunched)
	})
	nc := get()
	if len(nc.Finalizers) != 1 {
		t.Errorf("launched without the termination finalizer: %v", nc.Finalizers)
	}
	h.create(test.Node("split-node", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	for range 3 {
		if _, err := h.c.ReconcileLaunch(h.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if got := get(); got.IsTrue(karpv1.ConditionTypeRegistered) || got.Status.NodeName != "" {
		t.Fatalf("a launch worker registered the NodeClaim: %+v, node %q", got.GetCondition(karpv1.ConditionTypeRegistered), got.Status.NodeName)
	}
	if n := len(h.env.Cloud.Created()); n != 1 {
		t.Errorf("%d instances launched, want 1", n)
	}
	test.Eventually(t, timeout, func() (bool, string) {
		_, _ = h.c.ReconcileLaunched(h.ctx, req)
		return condition(get(), karpv1.ConditionTypeRegistered)
	})
}

// A NodeClaim deleted before its launch is no longer a launch on its way: the launch windows stop waiting for
// it at once rather than when its note expires.
func TestDeletedNodeClaimIsNoLongerALaunchOnItsWay(t *testing.T) {
	env := test.StartControllerEnv(t)
	d := env.Deps
	d.LaunchNotices = cloudprovider.NewLaunchNotices(d.Clock, time.Hour)
	c := NewController(d)
	d.LaunchNotices.Expect("deleted-before-launch")
	if got := d.LaunchNotices.Waiting(); got != 1 {
		t.Fatalf("Waiting() = %d after one noted launch, want 1", got)
	}
	if _, err := c.ReconcileLaunch(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "deleted-before-launch"}}); err != nil {
		t.Fatal(err)
	}
	if got := d.LaunchNotices.Waiting(); got != 0 {
		t.Errorf("Waiting() = %d once the NodeClaim is gone, want 0", got)
	}
}

// A planned pod whose nomination the kube-scheduler cleared between registration and the Node becoming Ready is
// nominated again when the NodeClaim is initialized, before other pods can take the room kept for it.
func TestInitializationNominatesAgain(t *testing.T) {
	h := newHarness(t)
	planned := test.Pod("cleared-before-ready").Obj()
	h.create(planned)
	h.create(test.NodeClaim("ready-later", "default").Obj())
	nc := h.reconcileUntil("ready-later", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.env.Deps.Plans.SetPlanned(map[string][]deps.PodRef{"ready-later": {{Namespace: planned.Namespace, Name: planned.Name, UID: planned.UID}}})
	h.create(test.Node("ready-later-node", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	h.reconcileUntil("ready-later", conditionIs(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.ReasonNodeNotReady,
		"Node ready-later-node is not Ready"))
	nominated := func() string {
		p := &corev1.Pod{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKeyFromObject(planned), p); err != nil {
			t.Fatal(err)
		}
		return p.Status.NominatedNodeName
	}
	if got := nominated(); got != "ready-later-node" {
		t.Fatalf("after registration the pod is nominated for %q, want ready-later-node", got)
	}
	// The scheduler's failed attempt on the NotReady Node clears the nomination.
	p := &corev1.Pod{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKeyFromObject(planned), p); err != nil {
		t.Fatal(err)
	}
	p.Status.NominatedNodeName = ""
	if err := h.env.Env.Client.Status().Update(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	h.markReady("ready-later-node")
	h.reconcileUntil("ready-later", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeInitialized) })
	test.Eventually(t, timeout, func() (bool, string) {
		got := nominated()
		return got == "ready-later-node", fmt.Sprintf("nominated for %q", got)
	})
}

// A registration whose NodeClaim status write meets a newer NodeClaim than the cache's (the cache is behind, as
// under load it often is behind this controller's own last write) reads the NodeClaim from the API server and
// writes again in the same pass, instead of waiting for the cache through conflict backoffs.
func TestRegistrationWritesPastAStaleCache(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("stale-cache", "default").Obj())
	stale := h.reconcileUntil("stale-cache", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	// Someone writes the NodeClaim after the copy the cache keeps.
	bumped := stale.DeepCopy()
	bumped.Annotations = map[string]string{"example.com/touched": "true"}
	if err := h.env.Env.Client.Patch(h.ctx, bumped, client.MergeFrom(stale)); err != nil {
		t.Fatal(err)
	}
	h.create(test.Node("stale-cache-node", stale.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	// The pass finds the Node through the cache.
	test.Eventually(t, timeout, func() (bool, string) {
		err := h.env.Deps.Client.Get(h.ctx, client.ObjectKey{Name: "stale-cache-node"}, &corev1.Node{})
		return err == nil, fmt.Sprint(err)
	})

	d := h.env.Deps
	d.APIReader = h.env.Env.Client
	d.Client = interceptor.NewClient(noWatch{h.env.Deps.Client}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*karpv1.NodeClaim); ok && key.Name == "stale-cache" {
				stale.DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	c := NewController(d)
	if _, err := c.ReconcileLaunched(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "stale-cache"}}); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "stale-cache"}, got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(karpv1.ConditionTypeRegistered) || got.Status.NodeName != "stale-cache-node" {
		t.Errorf("after one pass: registered=%t nodeName=%q, want registered on stale-cache-node", got.IsTrue(karpv1.ConditionTypeRegistered), got.Status.NodeName)
	}
	if got.Annotations["example.com/touched"] != "true" {
		t.Errorf("the newer write was lost: annotations %v", got.Annotations)
	}
}

// noWatch lets the manager's client be wrapped by an interceptor, which wants a client.WithWatch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch not supported")
}

// The launch records that the NodeClaim waits for its Node along with the launch, so that the lifecycle's passes
// before the Node appears write nothing: in a scale-out that write was one more request a node, and it left the
// cache one write behind for the registration's own.
func TestLaunchRecordsTheWaitForTheNode(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("no-node-yet", "default").Obj())
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "no-node-yet"}}
	var launched *karpv1.NodeClaim
	test.Eventually(t, timeout, func() (bool, string) {
		_, _ = h.c.ReconcileLaunch(h.ctx, req)
		launched = &karpv1.NodeClaim{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "no-node-yet"}, launched); err != nil {
			return false, err.Error()
		}
		return condition(launched, karpv1.ConditionTypeLaunched)
	})
	waiting := conditionIs(karpv1.ConditionTypeRegistered, metav1.ConditionFalse, karpv1.ReasonNodeNotFound,
		"waiting for a Node with providerID "+launched.Status.ProviderID+" to join the cluster")
	if ok, msg := waiting(launched); !ok {
		t.Fatalf("after the launch: %s", msg)
	}
	// Once the cache shows the launch, passes before the Node appears write nothing.
	test.Eventually(t, timeout, func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		if err := h.env.Deps.Client.Get(h.ctx, client.ObjectKey{Name: "no-node-yet"}, nc); err != nil {
			return false, err.Error()
		}
		return nc.ResourceVersion == launched.ResourceVersion, "cache at " + nc.ResourceVersion + ", want " + launched.ResourceVersion
	})
	var writes []string
	d := h.env.Deps
	d.Client = interceptor.NewClient(noWatch{h.env.Deps.Client}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes = append(writes, fmt.Sprintf("patch %T %s", obj, obj.GetName()))
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			writes = append(writes, fmt.Sprintf("patch %s of %T %s", sub, obj, obj.GetName()))
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	c := NewController(d)
	for range 3 {
		if _, err := c.ReconcileLaunched(h.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if len(writes) != 0 {
		t.Errorf("passes before the Node appeared wrote: %v", writes)
	}
}

// Registration records in its one NodeClaim write what keeps the Node from being initialized, so that the
// initialization that follows in the same pass has nothing to write while the Node is not Ready.
func TestRegistrationRecordsWhyTheNodeIsNotInitialized(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("not-ready-yet", "default").Obj())
	launched := h.reconcileUntil("not-ready-yet", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.create(test.Node("not-ready-yet-node", launched.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	// The pass below reads the launched NodeClaim and the Node from the cache.
	test.Eventually(t, timeout, func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		if err := h.env.Deps.Client.Get(h.ctx, client.ObjectKey{Name: "not-ready-yet"}, nc); err != nil {
			return false, err.Error()
		}
		err := h.env.Deps.Client.Get(h.ctx, client.ObjectKey{Name: "not-ready-yet-node"}, &corev1.Node{})
		return nc.ResourceVersion == launched.ResourceVersion && err == nil, fmt.Sprintf("nodeclaim at %s (want %s), node: %v", nc.ResourceVersion, launched.ResourceVersion, err)
	})
	var writes []string
	d := h.env.Deps
	d.Client = interceptor.NewClient(noWatch{h.env.Deps.Client}, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				writes = append(writes, sub)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	if _, err := NewController(d).ReconcileLaunched(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "not-ready-yet"}}); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "not-ready-yet"}, got); err != nil {
		t.Fatal(err)
	}
	if ok, msg := condition(got, karpv1.ConditionTypeRegistered); !ok {
		t.Fatalf("not registered after one pass: %s", msg)
	}
	if ok, msg := conditionIs(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.ReasonNodeNotReady,
		"Node not-ready-yet-node is not Ready")(got); !ok {
		t.Errorf("initialized: %s", msg)
	}
	if len(writes) != 1 {
		t.Errorf("the registering pass wrote the NodeClaim's status %d times (%v), want once", len(writes), writes)
	}
}

// TestRegistrationNotRepeatedFromStaleCopy: a pass that reads the NodeClaim as it was before this controller
// registered it (a cache behind the controller's own write) writes nothing, instead of a status write the API
// server would refuse.
func TestRegistrationNotRepeatedFromStaleCopy(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("stale-a", "default").Obj())
	nc := h.reconcileUntil("stale-a", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.create(test.Node("node-stale-a", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	before := &karpv1.NodeClaim{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: "stale-a"}, before); err != nil {
		t.Fatal(err)
	}
	h.reconcileUntil("stale-a", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) })
	writes := 0
	d := h.env.Deps
	d.Client = interceptor.NewClient(noWatch{h.env.Deps.Client}, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	c := h.c
	c.deps = d
	res, done, err := c.register(h.ctx, before.DeepCopy())
	if err != nil || !done || res.RequeueAfter == 0 {
		t.Errorf("pass on the stale copy: result %+v, done %v, error %v; want a requeue and the pass stopped", res, done, err)
	}
	if writes != 0 {
		t.Errorf("%d status writes from the stale copy, want 0", writes)
	}
}

// TestPassOnCacheBehindOwnWrite: a pass that reads the NodeClaim from a cache still behind this controller's
// last write (here the initialization) works on the NodeClaim as written, so it writes nothing the API server
// refuses (before, it initialized again from the older copy: a failed patch test, then a read and a second write).
func TestPassOnCacheBehindOwnWrite(t *testing.T) {
	h := newHarness(t)
	h.create(test.NodeClaim("behind", "default").Obj())
	nc := h.reconcileUntil("behind", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
	h.create(test.Node("behind-node", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Obj())
	stale := h.reconcileUntil("behind", conditionIs(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.ReasonNodeNotReady,
		"Node behind-node is not Ready"))
	h.markReady("behind-node")
	h.reconcileUntil("behind", func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeInitialized) })
	d := h.env.Deps
	var counts *test.StatusWrites
	d.Client, counts = test.StaleNodeClaims(h.env.Deps.Client, func() *karpv1.NodeClaim { return stale })
	h.c.deps = d
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "behind"}}
	if _, err := h.c.ReconcileLaunched(h.ctx, req); err != nil {
		t.Errorf("pass on the stale copy: %v", err)
	}
	if writes, refused := counts.Counts(); writes != 0 || refused != 0 {
		t.Errorf("pass on a cache behind its own write: %d status writes, %d refused; want none", writes, refused)
	}
	// Once the memo is forgotten (the NodeClaim's deletion, or a minute), the stale copy is what the pass sees:
	// the check above can fail.
	h.c.written.Forget("behind")
	_, _ = h.c.ReconcileLaunched(h.ctx, req)
	if writes, _ := counts.Counts(); writes == 0 {
		t.Error("a pass on the stale copy without the memo wrote nothing: the test above proves nothing")
	}
}
