package status

import (
	"context"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail/dovetail/pkg/test"
)

// A NodeClaim's creation and updates leave its EC2NodeClass alone; its deletion enqueues the class (whose
// finalizer waits for it).
func TestNodeClaimDeletionsOnly(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h := nodeClaimDeletions()
	claim := test.NodeClaim("default-abcde", "default").Obj()
	if claim.Spec.NodeClassRef == nil || !refersToNodeClass(claim) {
		t.Fatalf("test NodeClaim refers to no EC2NodeClass: %+v", claim.Spec.NodeClassRef)
	}
	updated := claim.DeepCopy()
	updated.Status.NodeName = "ip-10-0-0-1"
	h.Create(ctx, event.CreateEvent{Object: claim}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: claim, ObjectNew: updated}, q)
	h.Generic(ctx, event.GenericEvent{Object: claim}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests after a create, an update and a generic event, want 0", n)
	}
	h.Delete(ctx, event.DeleteEvent{Object: updated}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d requests after the deletion, want 1", n)
	}
	if req, _ := q.Get(); req.Name != claim.Spec.NodeClassRef.Name {
		t.Errorf("enqueued %v, want the class %q", req, claim.Spec.NodeClassRef.Name)
	}
}
