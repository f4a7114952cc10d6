package disruption

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestConcurrentUpdateIsRetriedQuietly: the NodeClaim is updated by someone else between the controller's read
// (from the manager's cache) and its status write (the Consolidatable condition). No pass returns an error, the
// condition lands, and the concurrent update is kept.
func TestConcurrentUpdateIsRetriedQuietly(t *testing.T) {
	h := newHarness(t)
	clk := h.env.Clock
	h.create(test.NodePool("racy").ConsolidateAfter("1m").Obj())
	h.createNodeClaim(test.NodeClaim("racy-a", "racy").Initialized(clk.Now()).Obj())
	clk.Step(time.Minute)
	i := &test.Interferer{Raw: h.env.Env.Client, Reader: h.env.Client,
		Match: func(o client.Object) bool { _, ok := o.(*karpv1.NodeClaim); return ok }}
	d := h.env.Deps
	d.Client = i.Client(h.env.Client)
	// The controller reads the cache: wait until it has the NodeClaim.
	test.Eventually(t, timeout, func() (bool, string) {
		return h.env.Client.Get(h.ctx, client.ObjectKey{Name: "racy-a"}, &karpv1.NodeClaim{}) == nil, "nodeclaim not in the cache"
	})
	test.ReconcileUntil(t, NewController(d), reconcile.Request{NamespacedName: types.NamespacedName{Name: "racy-a"}}, i, 20, func() (bool, string) {
		nc := h.nodeClaim("racy-a")
		c := nc.GetCondition(karpv1.ConditionTypeConsolidatable)
		ok, msg := c != nil && c.Status == "True" && c.Reason == ReasonConsolidatable, fmt.Sprintf("Consolidatable = %+v", c)
		if hit, _ := i.Interfered(); hit && nc.Annotations[test.InterferedAnnotation] != "true" {
			t.Fatalf("a write undid the concurrent update: annotations %v", nc.Annotations)
		}
		return ok, msg
	})
}

// TestPassOnCacheBehindOwnWrite: a pass that reads the NodeClaim from a cache still behind the controller's own
// write of Consolidatable (a pod event brought it back at once) works on the NodeClaim as written and writes
// nothing; before, it appended Consolidatable again and the API server refused the duplicate.
func TestPassOnCacheBehindOwnWrite(t *testing.T) {
	h := newHarness(t)
	clk := h.env.Clock
	h.create(test.NodePool("behind").ConsolidateAfter("1m").Obj())
	h.createNodeClaim(test.NodeClaim("behind-a", "behind").Initialized(clk.Now()).Obj())
	clk.Step(time.Minute)
	test.Eventually(t, timeout, func() (bool, string) {
		return h.env.Client.Get(h.ctx, client.ObjectKey{Name: "behind-a"}, &karpv1.NodeClaim{}) == nil, "nodeclaim not in the cache"
	})
	stale := h.nodeClaim("behind-a")
	var staleReads bool
	d := h.env.Deps
	var counts *test.StatusWrites
	d.Client, counts = test.StaleNodeClaims(h.env.Client, func() *karpv1.NodeClaim {
		if staleReads {
			return stale
		}
		return nil
	})
	ctrl := NewController(d)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "behind-a"}}
	test.Eventually(t, timeout, func() (bool, string) {
		if _, err := ctrl.Reconcile(h.ctx, req); err != nil {
			return false, err.Error()
		}
		c := h.nodeClaim("behind-a").GetCondition(karpv1.ConditionTypeConsolidatable)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("Consolidatable = %+v", c)
	})
	staleReads = true
	counts.Reset()
	if _, err := ctrl.Reconcile(h.ctx, req); err != nil {
		t.Errorf("pass on the stale copy: %v", err)
	}
	if writes, refused := counts.Counts(); writes != 0 || refused != 0 {
		t.Errorf("pass on a cache behind its own write: %d status writes, %d refused; want none", writes, refused)
	}
	// Without the memo the stale copy is what the pass sees: the check above can fail.
	ctrl.written.Forget("behind-a")
	_, _ = ctrl.Reconcile(h.ctx, req)
	if writes, _ := counts.Counts(); writes == 0 {
		t.Error("a pass on the stale copy without the memo wrote nothing: the test above proves nothing")
	}
}
