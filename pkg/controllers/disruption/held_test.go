package disruption

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestHeldPodsAreNotOnTheWay: a command that waits (hold) keeps its room for the normal check of the commands
// after it, but its pods do not move yet, so a command whose small pod could take that room the kube-scheduler's
// way is checked against it by the normal check only, not made to wait for it; the pods of a command cleared
// (admit) are on their way and are waited for.
func TestHeldPodsAreNotOnTheWay(t *testing.T) {
	big := test.SchedPod("big").Requests("3500m", "1Gi").Obj()
	big.Spec.NodeName = "old-big"
	small := test.SchedPod("small").Requests("900m", "1Gi").Obj()
	small.Spec.NodeName = "old-small"
	claim := func(node string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{}
		nc.Name, nc.Status.NodeName = node, node
		return nc
	}
	bigCmd := &InProgress{Record: Record{ID: "big"}, Candidates: []*karpv1.NodeClaim{claim("old-big")}}
	smallCmd := &InProgress{Record: Record{ID: "small"}, Candidates: []*karpv1.NodeClaim{claim("old-small")}}
	for _, tc := range []struct {
		name          string
		first         func(k *drainChecker)
		wantContended bool
	}{
		{name: "the large pod's command waits", first: func(k *drainChecker) { k.hold(bigCmd) }},
		{name: "the large pod's command drains", first: func(k *drainChecker) { k.admit(bigCmd) }, wantContended: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &drainChecker{
				cluster: &scheduling.Snapshot{Nodes: []*scheduling.StateNode{
					test.SchedNode("roomy", "4", "16Gi").Obj(), test.SchedNode("tight", "1", "16Gi").Obj(),
					test.SchedNode("old-big", "4", "16Gi").Pods(big).Obj(), test.SchedNode("old-small", "1", "16Gi").Pods(small).Obj()}},
				bound:         map[string][]*corev1.Pod{"old-big": {big}, "old-small": {small}},
				drain:         map[string]bool{},
				unboundCopies: map[*corev1.Pod]*corev1.Pod{},
				held:          map[*corev1.Pod]bool{},
			}
			tc.first(k)
			why, contended, err := k.check(context.Background(), smallCmd)
			if err != nil {
				t.Fatal(err)
			}
			if contended != tc.wantContended {
				t.Errorf("check = %q, contended %v; want contended %v", why, contended, tc.wantContended)
			}
			if !tc.wantContended && why != "" {
				t.Errorf("check = %q, want the drain cleared", why)
			}
		})
	}
}

// TestHeldForSharesOneCluster: the contended check's cluster takes the checked command's holds off for the check
// only, keeps them off once the command is cleared (lift), leaves the other commands' on, and never touches the
// pass's cluster.
func TestHeldForSharesOneCluster(t *testing.T) {
	held := func(name, id string) *scheduling.StateNode {
		return test.SchedNode(name, "4", "16Gi").Taint(ReplacementHoldTaintKey, id, corev1.TaintEffectPreferNoSchedule).Obj()
	}
	cluster := &scheduling.Snapshot{Nodes: []*scheduling.StateNode{test.SchedNode("plain", "4", "16Gi").Obj(), held("ra", "a"), held("rb", "b")}}
	k := &drainChecker{cluster: cluster}
	a := &InProgress{Record: Record{ID: "a"}}
	b := &InProgress{Record: Record{ID: "b"}}
	holds := func(c *scheduling.Snapshot) []string {
		var out []string
		for _, n := range c.Nodes {
			if id, ok := holdOf(n); ok {
				out = append(out, n.Name+"="+id)
			}
		}
		return out
	}
	check := func(step string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: holds %v, want %v", step, got, want)
		}
	}
	c, restore := k.heldFor(a)
	check("checking a", holds(c), "rb=b")
	restore()
	check("a not cleared", holds(k.contest), "ra=a", "rb=b")
	_, restore = k.heldFor(a)
	k.lift(a)
	restore()
	check("a cleared", holds(k.contest), "rb=b")
	c, restore = k.heldFor(b)
	check("checking b after a", holds(c))
	restore()
	check("b not cleared", holds(k.contest), "rb=b")
	check("the pass's cluster", holds(cluster), "ra=a", "rb=b")
}
