package disruption_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// contentionCluster: NodePool "default" with a budget of 0 (the passes start nothing of their own), two empty
// nodes, "roomy" of 4 cores and "tight" of 1 core, and two commands in progress: "2-big" deleting node "big"
// (a pod of 3.5 cores, which only "roomy" takes) and "1-small" deleting node "small" (a pod of 0.9 cores, which
// either takes, and the kube-scheduler's scoring would put on "roomy", the emptier).
func contentionCluster(t *testing.T, e *test.ControllerEnv) {
	t.Helper()
	if err := e.Env.Client.Create(context.Background(), test.NodePool("default").Budget("0").Obj()); err != nil {
		t.Fatal(err)
	}
	clusterNode(t, e, "roomy", "4", "16Gi", nil)
	clusterNode(t, e, "tight", "1", "4Gi", nil)
	clusterNode(t, e, "big", "4", "16Gi", nil)
	bindPod(t, e, "big-0", "3500m", "big")
	clusterNode(t, e, "small", "1", "4Gi", nil)
	bindPod(t, e, "small-0", "900m", "small")
	startCommand(t, e, "1-small", []string{"small"})
	startCommand(t, e, "2-big", []string{"big"})
}

// TestLargePodsDrainFirst: of two drains whose pods fit together only if the large pod gets the roomy node, the
// pass drains the large pod's node and holds the other until the large pod has landed (the kube-scheduler would
// give the roomy node to the small pod first); the other waits no longer than ContentionWait when it does not.
func TestLargePodsDrainFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moved bool // the large pod lands on "roomy"
	}{{name: "the large pod lands", moved: true}, {name: "the large pod does not land"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := test.StartControllerEnv(t)
			ctx := context.Background()
			contentionCluster(t, e)
			ctrl := disruption.NewController(e.Deps)
			pass := func() []string {
				t.Helper()
				if err := ctrl.Reconcile(ctx); err != nil {
					t.Fatal(err)
				}
				e.Clock.Step(disruption.BusyPollPeriod)
				return deleting(t, e)
			}
			if got := pass(); !slices.Equal(got, []string{"big"}) {
				t.Fatalf("first pass: deleting %v, want only [big]", got)
			}
			test.Eventually(t, wait, func() (bool, string) {
				nc := &karpv1.NodeClaim{}
				err := e.Client.Get(ctx, client.ObjectKey{Name: "big"}, nc)
				return err == nil && !nc.DeletionTimestamp.IsZero(), "deletion not cached yet"
			})
			if got := pass(); !slices.Equal(got, []string{"big"}) {
				t.Fatalf("second pass, the large pod still on its way: deleting %v, want only [big]", got)
			}
			if tc.moved {
				movePods(t, e, []string{"big"}, "roomy")
			} else {
				e.Clock.Step(disruption.ContentionWait)
			}
			if got := pass(); !slices.Equal(got, []string{"big", "small"}) {
				t.Fatalf("after the large pod landed or ContentionWait: deleting %v, want [big small]", got)
			}
		})
	}
}

// TestHeldReplacementsInTheContendedCheck: the contended check sees the cluster as the kube-scheduler will once the
// command drains. A pod on its way avoids a replacement still held for a command that waits ("spare", held for
// "w"), however empty, and takes the command's own replacement ("roomy", whose hold the pass lifts), where the
// command's large pod then has no room: the command waits for the pod to land (ContentionWait) rather than drain
// into a replacement the kube-scheduler is about to fill. Were the hold ignored, the pod would go to "spare" and
// the command drain at once.
func TestHeldReplacementsInTheContendedCheck(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Budget("0").Obj()); err != nil {
		t.Fatal(err)
	}
	// 0.9 cores and 1Gi leave "spare" (3 cores, 64Gi) the larger share free, but "spare" cannot take 3.5 cores.
	clusterNode(t, e, "spare", "3", "64Gi", nil)
	clusterNode(t, e, "roomy", "4", "4Gi", nil)
	clusterNode(t, e, "big", "4", "16Gi", nil)
	bindPod(t, e, "big-0", "3500m", "big")
	clusterNode(t, e, "wnode", "4", "16Gi", nil)
	startCommand(t, e, "1-big", []string{"big"})
	startCommand(t, e, "w", []string{"wnode"})
	holdNode(t, e, "roomy", "1-big")
	holdNode(t, e, "spare", "w")
	for name, id := range map[string]string{"roomy": "1-big", "spare": "w"} {
		nc := &karpv1.NodeClaim{}
		if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(nc.DeepCopy())
		nc.Annotations = map[string]string{disruption.ReplacementForAnnotationKey: id}
		if err := e.Env.Client.Patch(ctx, nc, patch); err != nil {
			t.Fatal(err)
		}
	}
	pending := test.SchedPod("on-its-way").Requests("900m", "1Gi").Obj()
	if err := e.Env.Client.Create(ctx, pending); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "spare"}, nc)
		if err != nil || nc.Annotations[disruption.ReplacementForAnnotationKey] != "w" {
			return false, "annotation not cached yet"
		}
		return e.Client.Get(ctx, client.ObjectKeyFromObject(pending), &corev1.Pod{}) == nil, "pending pod not cached yet"
	})
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleting(t, e); slices.Contains(got, "big") {
		t.Fatalf("first pass: deleting %v; want big kept while the pod on its way would take its room", got)
	}
	e.Clock.Step(disruption.ContentionWait + disruption.BusyPollPeriod)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleting(t, e); !slices.Contains(got, "big") {
		t.Fatalf("after ContentionWait: deleting %v, want big", got)
	}
}

// TestLongWaitingCommandComesFirst: a command that has waited ContentionFirst for other moving pods to land is
// checked before a command of larger pods that arrives later, and that command waits for it rather than it for
// that command. In contentionCluster the large pod of "2-big" stays on its way (it never lands), and "1-small"
// waits for it; then "3-big" (a pod of 3.5 cores on "big2") arrives with an empty node of 4 cores, "roomy3":
// there is room for all three pods if the small one goes first. Checked largest first, "3-big" drains and
// "1-small" waits again (its pod would take one of the roomy nodes the kube-scheduler's way); once "1-small"
// has waited ContentionFirst, it drains and "3-big" waits.
func TestLongWaitingCommandComesFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waited time.Duration
		want   []string
	}{
		{name: "waited less", waited: disruption.ContentionFirst / 2, want: []string{"big", "big2"}},
		{name: "waited ContentionFirst", waited: disruption.ContentionFirst, want: []string{"big", "small"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := test.StartControllerEnv(t)
			ctx := context.Background()
			contentionCluster(t, e)
			ctrl := disruption.NewController(e.Deps)
			if err := ctrl.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			if got := deleting(t, e); !slices.Equal(got, []string{"big"}) {
				t.Fatalf("first pass: deleting %v, want only [big]", got)
			}
			test.Eventually(t, wait, func() (bool, string) {
				nc := &karpv1.NodeClaim{}
				err := e.Client.Get(ctx, client.ObjectKey{Name: "big"}, nc)
				return err == nil && !nc.DeletionTimestamp.IsZero(), "deletion not cached yet"
			})
			e.Clock.Step(tc.waited)
			clusterNode(t, e, "roomy3", "4", "16Gi", nil)
			clusterNode(t, e, "big2", "4", "16Gi", nil)
			bindPod(t, e, "big2-0", "3500m", "big2")
			startCommand(t, e, "3-big", []string{"big2"})
			if err := ctrl.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			if got := deleting(t, e); !slices.Equal(got, tc.want) {
				t.Fatalf("after %s: deleting %v, want %v", tc.waited, got, tc.want)
			}
		})
	}
}
