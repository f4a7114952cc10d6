package disruption_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// noWatch lets the manager's client (cache reads, API writes) be wrapped by an interceptor, which wants a
// client.WithWatch; the controller never watches through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// TestNodeUpdatedBeforeTaintDoesNotStopTheCommand is the live-lock's regression test: the candidate's Node is
// updated (as a kubelet heartbeat does) after the pass read the cluster and before it taints the Node. The pass
// must still taint it and launch the replacement, without an error.
func TestNodeUpdatedBeforeTaintDoesNotStopTheCommand(t *testing.T) {
	e := test.StartControllerEnv(t)
	drifted(t, e)
	var bumped, oneRequest atomic.Int32
	d := e.Deps
	d.Client = interceptor.NewClient(noWatch{e.Client}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok && patch.Type() == types.JSONPatchType {
				err := c.Patch(ctx, obj, patch, opts...)
				if err == nil {
					oneRequest.Add(1)
				}
				return err
			}
			// Recording the command comes after the pass's snapshot and before the taint.
			if _, ok := obj.(*karpv1.NodeClaim); ok && bumped.Add(1) == 1 {
				node := &corev1.Node{}
				if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
					return err
				}
				node.Labels["heartbeat"] = "1"
				if err := e.Env.Client.Update(ctx, node); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	if bumped.Load() != 0 {
		t.Fatal("interceptor ran early")
	}
	node := passTaintsOld(t, e, d, &bumped, "updated")
	if node.Labels["heartbeat"] != "1" {
		t.Errorf("the taint undid the concurrent update of node old: labels %v", node.Labels)
	}
	// The update changed the Node's metadata, not its spec: the taint still takes one request.
	if oneRequest.Load() != 1 {
		t.Errorf("%d taints written in one request, want 1", oneRequest.Load())
	}
}

// TestTaintAddedBeforeOursIsKept: another writer taints the candidate's Node after the pass read the cluster and
// before the pass taints it. The pass's one-request taint (a patch that holds only while the Node's spec is the
// one the pass read) must not apply, and the taint is added to the Node as it is now: both taints stay.
func TestTaintAddedBeforeOursIsKept(t *testing.T) {
	e := test.StartControllerEnv(t)
	drifted(t, e)
	var bumped atomic.Int32
	d := e.Deps
	d.Client = interceptor.NewClient(noWatch{e.Client}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok && bumped.Add(1) == 1 {
				node := &corev1.Node{}
				if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
					return err
				}
				node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule})
				if err := e.Env.Client.Update(ctx, node); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	node := passTaintsOld(t, e, d, &bumped, "tainted")
	if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "example.com/other" }) {
		t.Errorf("the pass's taint undid the other writer's: taints %+v", node.Spec.Taints)
	}
}

// passTaintsOld runs a pass with deps d on drifted's node "old", which the test's interceptor changed (how: what)
// between the pass's snapshot and its taint (bumped counts the interceptor's calls); it fails unless the pass
// ran without an error, launched the replacement and tainted the node, and returns the node as it is now.
func passTaintsOld(t *testing.T, e *test.ControllerEnv, d deps.Deps, bumped *atomic.Int32, what string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	if err := disruption.NewController(d).Reconcile(ctx); err != nil {
		t.Fatalf("pass failed: %v", err)
	}
	if bumped.Load() == 0 {
		t.Fatalf("the node was never %s between the snapshot and the taint: the test does not test anything", what)
	}
	replacementOf(t, e)
	node := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
		t.Fatal(err)
	}
	if !tainted(node) {
		t.Errorf("node old has no %s taint: %+v", karpv1.DisruptedTaintKey, node.Spec.Taints)
	}
	return node
}

// TestCommandStoppedAfterRecordingIsFinished: a pass records the command but fails to create the replacement
// (an API error). The next pass, after missingReplacementGrace, creates the replacement instead of abandoning
// the command.
func TestCommandStoppedAfterRecordingIsFinished(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	var fail atomic.Bool
	fail.Store(true)
	d := e.Deps
	d.Client = interceptor.NewClient(noWatch{e.Client}, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok && fail.Load() {
				return errors.New("injected: the API server is unavailable")
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	ctrl := disruption.NewController(d)
	if err := ctrl.Reconcile(ctx); err == nil {
		t.Fatal("pass did not report the failed create")
	}
	test.Eventually(t, wait, func() (bool, string) {
		old := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "old"}, old)
		return err == nil && old.Annotations[disruption.CommandAnnotationKey] != "", fmt.Sprintf("command not cached yet (%v)", err)
	})
	fail.Store(false)
	e.Clock.Step(40 * time.Second)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatalf("second pass failed: %v", err)
	}
	repl := replacementOf(t, e)
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if old.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatal("the command was abandoned instead of finished")
	}
	// The replacement is the one the command named, and it finishes the command.
	ready(t, e, repl)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if old.DeletionTimestamp.IsZero() {
		t.Error("old nodeclaim not deleted after the replacement launched by the second pass initialized")
	}
}

// replacementList waits until the cache shows n NodeClaims launched for disruption commands and returns them.
func replacementList(t *testing.T, e *test.ControllerEnv, n int) []*karpv1.NodeClaim {
	t.Helper()
	var out []*karpv1.NodeClaim
	test.Eventually(t, wait, func() (bool, string) {
		l := &karpv1.NodeClaimList{}
		if err := e.Client.List(context.Background(), l); err != nil {
			return false, err.Error()
		}
		out = nil
		for i := range l.Items {
			if l.Items[i].Annotations[disruption.ReplacementForAnnotationKey] != "" {
				out = append(out, &l.Items[i])
			}
		}
		return len(out) == n, fmt.Sprintf("%d replacements, want %d", len(out), n)
	})
	return out
}

// newReplacement waits until the cache shows n replacements and returns the one not in seen, adding it there.
func newReplacement(t *testing.T, e *test.ControllerEnv, n int, seen map[string]bool) *karpv1.NodeClaim {
	t.Helper()
	var fresh []*karpv1.NodeClaim
	for _, nc := range replacementList(t, e, n) {
		if !seen[nc.Name] {
			fresh = append(fresh, nc)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("%d new replacements, want 1", len(fresh))
	}
	seen[fresh[0].Name] = true
	return fresh[0]
}

// hog binds a pod that fills the replacement's node (8 cpu), as the kube-scheduler does with the pods of other
// nodes being drained, and waits until the cache shows it.
func hog(t *testing.T, e *test.ControllerEnv, repl *karpv1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	p := test.SchedPod("hog-"+repl.Name).Requests("8", "1Gi").Obj()
	p.Spec.NodeName = repl.Name + "-node"
	if err := e.Env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		return e.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}) == nil, "pod " + p.Name + " not cached yet"
	})
}

// oldRecord reads nodeclaim old from the API server: whether it is being deleted, and its command record.
func oldRecord(t *testing.T, e *test.ControllerEnv) (deleting bool, r disruption.Record, recorded bool) {
	t.Helper()
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(context.Background(), client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	r, recorded, err := disruption.RecordOf(old)
	if err != nil {
		t.Fatal(err)
	}
	return !old.DeletionTimestamp.IsZero(), r, recorded
}

// TestExtraReplacementWhenPodsDoNotFit: the drifted node's replacement initialized, but the kube-scheduler filled
// it with another pod, so the old node's pod would have nowhere to go. The old node is not drained; the command
// launches one more replacement (recorded on the candidate) and drains the old node once that one initializes.
func TestExtraReplacementWhenPodsDoNotFit(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	first := newReplacement(t, e, 1, seen)
	ready(t, e, first)
	hog(t, e, first)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	extra := newReplacement(t, e, 2, seen)
	deleting, r, _ := oldRecord(t, e)
	if deleting {
		t.Fatal("old nodeclaim deleted although its pod fits nowhere else")
	}
	if r.Extra != 1 || r.Replacements != 2 || len(r.Launch) != 2 || r.Launch[0].Name != first.Name || r.Launch[1].Name != extra.Name {
		t.Fatalf("record after the extra launch: extra=%d replacements=%d launch=%v, want %s then %s",
			r.Extra, r.Replacements, r.Launch, first.Name, extra.Name)
	}
	if got := extra.Annotations[disruption.ReplacementForAnnotationKey]; got != r.ID {
		t.Errorf("extra replacement points at %q, want %q", got, r.ID)
	}
	// Another pass before the extra replacement initializes waits: nothing more is launched.
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if deleting, _, _ := oldRecord(t, e); deleting {
		t.Fatal("old nodeclaim deleted before the extra replacement initialized")
	}
	ready(t, e, extra)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if deleting, _, _ := oldRecord(t, e); !deleting {
		t.Fatal("old nodeclaim not deleted after the extra replacement initialized")
	}
	if n := len(replacementList(t, e, 2)); n != 2 {
		t.Errorf("%d replacements, want 2", n)
	}
}

// TestNoDrainWhenPodsDoNotFit: as above, but the kube-scheduler fills every extra replacement too. After
// MaxExtraLaunches extra launches the command launches no more; after ValidationTimeout it is abandoned and the
// old node stays.
func TestNoDrainWhenPodsDoNotFit(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 1; i <= disruption.MaxExtraLaunches+1; i++ {
		repl := newReplacement(t, e, i, seen)
		ready(t, e, repl)
		hog(t, e, repl)
		if err := ctrl.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if deleting, _, _ := oldRecord(t, e); deleting {
			t.Fatal("old nodeclaim deleted although its pod fits nowhere else")
		}
	}
	replacementList(t, e, disruption.MaxExtraLaunches+1)
	e.Clock.Step(disruption.ValidationTimeout + time.Second)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	deleting, _, recorded := oldRecord(t, e)
	if deleting {
		t.Fatal("old nodeclaim deleted although its pod fits nowhere else")
	}
	if recorded {
		t.Error("command not abandoned after ValidationTimeout")
	}
}

// TestNodeClaimUpdatedBeforeRecordingDoesNotStopTheCommand: the candidate NodeClaim is updated by someone else
// (here a test annotation; in the field a status write of another controller) after the pass read the cluster and
// before it records the command on it. "recording disruption on nodeclaim …: the object has been modified" was
// seen in the field: the record is a merge patch of one annotation, which needs no lock, so the pass records the
// command, launches the replacement and returns no error, and the concurrent update stays.
func TestNodeClaimUpdatedBeforeRecordingDoesNotStopTheCommand(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	i := &test.Interferer{Raw: e.Env.Client, Match: func(o client.Object) bool { _, ok := o.(*karpv1.NodeClaim); return ok && o.GetName() == "old" }}
	d := e.Deps
	d.Client = i.Client(e.Client)
	if err := disruption.NewController(d).Reconcile(ctx); err != nil {
		t.Fatalf("pass failed: %v", err)
	}
	if hit, what := i.Interfered(); !hit {
		t.Fatal("nothing of the candidate's was written: the test does not test anything")
	} else {
		t.Logf("interfered with %s", what)
	}
	replacementOf(t, e)
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if old.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Errorf("no command recorded on nodeclaim old: annotations %v", old.Annotations)
	}
	if old.Annotations[test.InterferedAnnotation] != "true" {
		t.Errorf("recording the command undid the concurrent update: annotations %v", old.Annotations)
	}
}

// TestOthersPodsWithoutRoomDoNotHoldACommand: another command is draining node "gone", whose 16-cpu pod fits on
// no node there is (the kube-scheduler filled the room meant for it). The drifted node's own pod fits on its
// initialized replacement, so the drifted node drains: another command's pods compete for room like pending
// pods, and only a command that would take room they have is held.
func TestOthersPodsWithoutRoomDoNotHoldACommand(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Budget("100%").Obj()); err != nil {
		t.Fatal(err)
	}
	driftedNode(t, e, "old", "web")
	clusterNode(t, e, "gone", "32", "64Gi", nil)
	bindPod(t, e, "stuck", "16", "gone")
	gone := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "gone"}, gone); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gone.DeepCopy())
	gone.Annotations = map[string]string{disruption.CommandAnnotationKey: `{"id":"other-1","reason":"Drifted","decision":"replace","replacements":1,"started":"2026-11-24T10:00:00Z","candidates":1}`}
	if err := e.Env.Client.Patch(ctx, gone, patch); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "gone"}, nc)
		return err == nil && !nc.DeletionTimestamp.IsZero(), "nodeclaim gone not cached as deleting"
	})
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	repl := newReplacement(t, e, 1, seen)
	ready(t, e, repl)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if deleting, r, _ := oldRecord(t, e); !deleting {
		t.Fatalf("old nodeclaim not deleted: its pod fits on its replacement (record: extra=%d)", r.Extra)
	}
	if n := len(replacementList(t, e, 1)); n != 1 {
		t.Errorf("%d replacements, want 1: nothing more is launched for another command's pod", n)
	}
}
