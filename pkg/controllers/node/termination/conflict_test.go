package termination_test

import (
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestConcurrentNodeUpdateIsRetriedQuietly: the Node is updated by someone else (a kubelet heartbeat, a user)
// between the node termination controller's read and its first write to it (the disrupted taint, conditions,
// finalizer). No pass returns an error, the node is drained and released, the instance terminated once, and the
// concurrent update was not undone while the Node was still there.
func TestConcurrentNodeUpdateIsRetriedQuietly(t *testing.T) {
	h := newHarness(t)
	nc, node := h.launch(nil)
	i := &test.Interferer{Raw: env.Client, Match: func(o client.Object) bool { _, ok := o.(*corev1.Node); return ok }}
	d := deps.Deps{Client: i.Client(env.Client), KubeClient: h.cs, CloudProvider: h.cloud, Clock: h.clock, Recorder: h.recorder, Metrics: h.metrics}
	ctrl := nodetermination.NewController(d)
	h.deleteClaim()
	h.reconcileClaim() // deletes the Node
	test.ReconcileUntil(t, ctrl, reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}}, i, 20, func() (bool, string) {
		h.reconcileClaim()
		got := h.getNode()
		if got == nil {
			return true, ""
		}
		if hit, _ := i.Interfered(); hit && got.Annotations[test.InterferedAnnotation] != "true" {
			t.Fatalf("a write undid the concurrent update of the node: annotations %v", got.Annotations)
		}
		return false, "node still there, finalizers " + join(got.Finalizers)
	})
	h.settle(5)
	if got := h.cloud.Deleted(); len(got) != 1 || got[0] != nc.Status.ProviderID {
		t.Errorf("terminated instances = %v, want [%s]", got, nc.Status.ProviderID)
	}
}

func join(s []string) string {
	out := ""
	for _, v := range s {
		out += v + " "
	}
	return out
}

// TestDrainOnCacheBehindOwnWrite: a drain pass that reads the NodeClaim from a cache still behind the controller's
// own write of the Drained condition (the next drain step follows within seconds) works on the NodeClaim as
// written, so its condition write is not refused; computed from the older copy, it appended the condition again
// and the API server refused the duplicate (in a 700-node drift, 212 refused writes).
func TestDrainOnCacheBehindOwnWrite(t *testing.T) {
	h := newHarness(t)
	nc, node := h.launch(nil)
	h.pod(test.DrainPod("web").Labels("app", "web"))
	h.pdb("web-pdb", "web", 0)
	// The NodeClaim is read alone, through the owner reference registration sets.
	orig := node.DeepCopy()
	node.OwnerReferences = []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID}}
	h.must(h.c.Patch(h.ctx, node, client.MergeFrom(orig)))
	h.deleteClaim()
	h.reconcileClaim() // deletes the Node
	stale := h.getClaim()
	if condition(stale, termination.ConditionTypeDrained) != nil {
		t.Fatalf("Drained set before the node's drain started: %+v", stale.Status.Conditions)
	}

	var staleReads atomic.Bool
	c, counts := test.StaleNodeClaims(env.Client, func() *karpv1.NodeClaim {
		if staleReads.Load() {
			return stale
		}
		return nil
	})
	ctrl := nodetermination.NewController(deps.Deps{Client: c, KubeClient: h.cs, CloudProvider: h.cloud, Clock: h.clock, Recorder: h.recorder, Metrics: h.metrics})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}}
	if _, err := ctrl.Reconcile(h.ctx, req); err != nil {
		t.Fatalf("first drain pass: %v", err)
	}
	if got := condition(h.getClaim(), termination.ConditionTypeDrained); got == nil || got.Status != metav1.ConditionFalse {
		t.Fatalf("Drained after the first pass = %+v, want False (the pod's budget allows no eviction)", got)
	}

	staleReads.Store(true)
	counts.Reset()
	if _, err := ctrl.Reconcile(h.ctx, req); err != nil {
		t.Errorf("pass on a cache behind its own write: %v", err)
	}
	if _, refused := counts.Counts(); refused != 0 {
		t.Errorf("pass on a cache behind its own write: %d status writes refused, want none", refused)
	}
	// Without the memo the stale copy is what the pass sees: the check above can fail.
	ctrl.ForgetWrite(nc.Name)
	_, _ = ctrl.Reconcile(h.ctx, req)
	if _, refused := counts.Counts(); refused == 0 {
		t.Error("a pass on the stale copy without the memo had no write refused: the test above proves nothing")
	}
}

// TestOnePatchAPass: the pass that finds the node drained sets Drained, VolumesDetached and InstanceTerminating
// and writes them in one NodeClaim status patch (three patches a node, one after the other, before); a pass that
// changes nothing writes nothing.
func TestOnePatchAPass(t *testing.T) {
	h := newHarness(t)
	nc, node := h.launch(nil)
	h.deleteClaim()
	h.reconcileClaim() // deletes the Node
	c, counts := test.StaleNodeClaims(env.Client, func() *karpv1.NodeClaim { return nil })
	ctrl := nodetermination.NewController(deps.Deps{Client: c, KubeClient: h.cs, CloudProvider: h.cloud, Clock: h.clock, Recorder: h.recorder, Metrics: h.metrics})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}}
	if _, err := ctrl.Reconcile(h.ctx, req); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	got := h.getClaim()
	for _, ct := range []string{termination.ConditionTypeDrained, termination.ConditionTypeVolumesDetached, karpv1.ConditionTypeInstanceTerminating} {
		if c := condition(got, ct); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s after the first pass = %+v, want True", ct, c)
		}
	}
	if writes, refused := counts.Counts(); writes != 1 || refused != 0 {
		t.Errorf("first pass: %d NodeClaim status writes (%d refused), want 1", writes, refused)
	}
	if c := condition(got, karpv1.ConditionTypeReady); c != nil && c.ObservedGeneration != nc.Generation {
		t.Errorf("Ready restamped by node termination: observedGeneration %d, want %d", c.ObservedGeneration, nc.Generation)
	}
	counts.Reset()
	if _, err := ctrl.Reconcile(h.ctx, req); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if writes, _ := counts.Counts(); writes != 0 {
		t.Errorf("second pass, nothing changed: %d NodeClaim status writes, want none", writes)
	}
}
