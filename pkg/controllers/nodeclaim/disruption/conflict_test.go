package disruption

import (
	"fmt"
	"testing"
	"time"

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
