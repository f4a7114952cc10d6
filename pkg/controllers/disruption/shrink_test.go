package disruption_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestCommandShrinksRatherThanAbort: a command to delete two nodes whose pods no longer fit together on the nodes
// there are (a 4-core keeper takes the 3-core pod or the 2-core one, not both). After ValidationTimeout the
// command goes on with the node whose pods fit and releases the other, rather than abandon both.
func TestCommandShrinksRatherThanAbort(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Budget("0").Obj()); err != nil {
		t.Fatal(err)
	}
	serviceNode(t, e, "keeper", "4")
	serviceNode(t, e, "a", "8", "2")
	serviceNode(t, e, "b", "8", "3")
	startCommand(t, e, "shrink", []string{"a", "b"})
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleting(t, e); len(got) != 0 {
		t.Fatalf("deleting %v although the pods of both do not fit", got)
	}
	e.Clock.Step(disruption.ValidationTimeout + time.Second)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	got := deleting(t, e)
	if len(got) != 1 {
		t.Fatalf("deleting %v after ValidationTimeout, want one of a and b", got)
	}
	kept := map[string]string{"a": "b", "b": "a"}[got[0]]
	nc := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: kept}, nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := nc.Annotations[disruption.CommandAnnotationKey]; ok {
		t.Errorf("released nodeclaim %s still carries the command", kept)
	}
}
