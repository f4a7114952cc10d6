package disruption_test

import (
	"context"
	"slices"
	"testing"

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
