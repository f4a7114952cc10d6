package disruption_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// replacementsOf waits until the cache shows n replacement NodeClaims and returns them by the command they
// belong to.
func replacementsOf(t *testing.T, e *test.ControllerEnv, n int) map[string]*karpv1.NodeClaim {
	t.Helper()
	out := map[string]*karpv1.NodeClaim{}
	for _, nc := range replacementList(t, e, n) {
		out[nc.Annotations[disruption.ReplacementForAnnotationKey]] = nc
	}
	if len(out) != n {
		t.Fatalf("%d replacements belong to %d commands, want one each", n, len(out))
	}
	return out
}

func recordID(t *testing.T, e *test.ControllerEnv, name string) string {
	t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	r, ok, err := disruption.RecordOf(nc)
	if err != nil || !ok {
		return ""
	}
	return r.ID
}

// TestCommandsRunInParallel: a NodePool whose budget allows one drifted node at a time. The first pass starts a
// command on one node; a pass while that command waits for its replacement starts nothing more (the budget
// counts the node in flight); once the budget is raised, the next pass starts a second command beside the
// first, without touching the first command's candidate or replacement. When the first replacement initializes,
// its candidate goes while the second command goes on.
func TestCommandsRunInParallel(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	np := test.NodePool("default").Budget("1").Obj()
	if err := e.Env.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	driftedNode(t, e, "old-a", "web-a")
	driftedNode(t, e, "old-b", "web-b")
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	first := replacementsOf(t, e, 1)
	idA, idB := recordID(t, e, "old-a"), recordID(t, e, "old-b")
	if (idA == "") == (idB == "") {
		t.Fatalf("want exactly one node in a command after the first pass, got records %q and %q", idA, idB)
	}
	firstCandidate, secondCandidate := "old-a", "old-b"
	if idA == "" {
		firstCandidate, secondCandidate = "old-b", "old-a"
	}
	// The budget is used up by the command in flight.
	e.Clock.Step(disruption.PollPeriod)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if id := recordID(t, e, secondCandidate); id != "" {
		t.Fatalf("a second command started beyond the budget: %s", id)
	}
	// Raise the budget: the next pass starts the second command beside the first.
	got := &karpv1.NodePool{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	if err := e.Env.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		np := &karpv1.NodePool{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "default"}, np)
		return err == nil && len(np.Spec.Disruption.Budgets) == 1 && np.Spec.Disruption.Budgets[0].Nodes == "100%", "budget change not cached yet"
	})
	e.Clock.Step(disruption.PollPeriod)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	both := replacementsOf(t, e, 2)
	firstID, secondID := recordID(t, e, firstCandidate), recordID(t, e, secondCandidate)
	if secondID == "" || secondID == firstID {
		t.Fatalf("no second command beside the first: records %q and %q", firstID, secondID)
	}
	for id := range first {
		if id != firstID {
			t.Fatalf("the first replacement belongs to %s, not to the first command %s", id, firstID)
		}
	}
	// The first command completes while the second waits for its replacement.
	ready(t, e, both[firstID])
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	nc := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: firstCandidate}, nc); err != nil {
		t.Fatal(err)
	}
	if nc.DeletionTimestamp.IsZero() {
		t.Errorf("%s not deleted after its replacement initialized", firstCandidate)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: secondCandidate}, nc); err != nil {
		t.Fatal(err)
	}
	if !nc.DeletionTimestamp.IsZero() || recordID(t, e, secondCandidate) != secondID {
		t.Errorf("%s: deleted or lost its command while its replacement is not initialized", secondCandidate)
	}
	// Two drift commands of NodePool default, counted once each by NodePool.
	if got := testutil.ToFloat64(e.Deps.Metrics.DisruptionDecisionsByNodePool.WithLabelValues("replace", "drifted", "", "default")); got != 2 {
		t.Errorf("voluntary_disruption_decisions_by_nodepool_total{replace,drifted,default} = %v, want 2", got)
	}
}

// TestStartWindowLeavesCommandsForLaterPasses: a decision finds a replace command for each of ten drifted nodes
// (budget 100%), more than the pass's commandWorkers. Starting a command takes longer than StartWindow (the
// clock moves on while its record is written), so once the commands begun at once are written the pass starts no
// other and leaves them, unwritten, for the next decision; the next passes start the rest. With fewer commands
// than workers every one of them may begin before the first write moves the clock (on a loaded machine they did).
func TestStartWindowLeavesCommandsForLaterPasses(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Budget("100%").Obj()); err != nil {
		t.Fatal(err)
	}
	names := []string{"old-a", "old-b", "old-c", "old-d", "old-e", "old-f", "old-g", "old-h", "old-i", "old-j"}
	if len(names) <= disruption.CommandWorkers {
		t.Fatalf("%d drifted nodes, want more than the %d command workers", len(names), disruption.CommandWorkers)
	}
	for _, name := range names {
		driftedNode(t, e, name, name+"-web")
	}
	d := e.Deps
	var slow atomic.Bool
	slow.Store(true)
	d.Client = interceptor.NewClient(noWatch{e.Client}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok && slow.Load() {
				e.Clock.Step(disruption.StartWindow + time.Second) // a slow API server
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	ctrl := disruption.NewController(d)
	recorded := func() int {
		n := 0
		for _, name := range names {
			if recordID(t, e, name) != "" {
				n++
			}
		}
		return n
	}
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	// Up to commandWorkers commands may have begun before the first write moved the clock; with the clock past
	// the window, those not begun are left.
	first := recorded()
	if first == 0 || first == len(names) {
		t.Fatalf("the first pass started %d of %d commands, want some but not all", first, len(names))
	}
	slow.Store(false)
	test.Eventually(t, wait, func() (bool, string) {
		e.Clock.Step(disruption.PollPeriod)
		if err := ctrl.Reconcile(ctx); err != nil {
			return false, err.Error()
		}
		n := recorded()
		return n == len(names), fmt.Sprintf("%d of %d commands started", n, len(names))
	})
}
