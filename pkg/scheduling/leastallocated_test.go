package scheduling_test

import (
	"context"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestLeastAllocated: with LeastAllocated the smallest pods go first, each to the node left with the most room,
// as the kube-scheduler's default scoring tends to place them; a plan would have kept the big node for the big pod.
func TestLeastAllocated(t *testing.T) {
	small := test.SchedPod("small").Labels("app", "small").Requests("900m", "3Gi").Obj()
	big := test.SchedPod("big").Labels("app", "big").Requests("3500m", "28Gi").Obj()
	cases := []struct {
		name    string
		nodes   []*scheduling.StateNode
		pods    []*corev1.Pod
		least   map[string]string // pod -> node with LeastAllocated
		planned map[string]string // pod -> node without
	}{{
		name:    "a small pod takes the emptiest node",
		nodes:   []*scheduling.StateNode{test.SchedNode("a", "4", "16Gi").Obj(), test.SchedNode("b", "8", "32Gi").Obj()},
		pods:    []*corev1.Pod{small},
		least:   map[string]string{"small": "b"},
		planned: map[string]string{"small": "a"},
	}, {
		name:    "the small pod first leaves the big one without room",
		nodes:   []*scheduling.StateNode{test.SchedNode("xl", "4", "30Gi").Obj(), test.SchedNode("m", "2", "8Gi").Obj()},
		pods:    []*corev1.Pod{big, small},
		least:   map[string]string{"small": "xl"},
		planned: map[string]string{"small": "m", "big": "xl"},
	}, {
		name: "the share of room left counts, not the amount",
		nodes: []*scheduling.StateNode{test.SchedNode("half", "8", "32Gi").Pods(test.SchedPod("x").Requests("4", "16Gi").Obj()).Obj(),
			test.SchedNode("small", "2", "8Gi").Obj()},
		pods:    []*corev1.Pod{small},
		least:   map[string]string{"small": "small"},
		planned: map[string]string{"small": "half"},
	}, {
		name: "a PreferNoSchedule taint the pod does not tolerate puts the node last, whatever its room",
		nodes: []*scheduling.StateNode{test.SchedNode("held", "8", "32Gi").Taint("hold", "x", corev1.TaintEffectPreferNoSchedule).Obj(),
			test.SchedNode("half", "8", "32Gi").Pods(test.SchedPod("x").Requests("4", "16Gi").Obj()).Obj()},
		pods:    []*corev1.Pod{small},
		least:   map[string]string{"small": "half"},
		planned: map[string]string{"small": "half"},
	}, {
		name: "a pod tolerating the taint is not kept off the node",
		nodes: []*scheduling.StateNode{test.SchedNode("held", "8", "32Gi").Taint("hold", "x", corev1.TaintEffectPreferNoSchedule).Obj(),
			test.SchedNode("half", "8", "32Gi").Pods(test.SchedPod("x").Requests("4", "16Gi").Obj()).Obj()},
		pods:    []*corev1.Pod{test.SchedPod("tolerant").Requests("900m", "3Gi").Toleration("hold", "x", corev1.TaintEffectPreferNoSchedule).Obj()},
		least:   map[string]string{"tolerant": "held"},
		planned: map[string]string{"tolerant": "half"},
	}, {
		name: "the avoided node still takes a pod no other node has room for",
		nodes: []*scheduling.StateNode{test.SchedNode("held", "4", "30Gi").Taint("hold", "x", corev1.TaintEffectPreferNoSchedule).Obj(),
			test.SchedNode("m", "2", "8Gi").Obj()},
		pods:    []*corev1.Pod{big, small},
		least:   map[string]string{"small": "m", "big": "held"},
		planned: map[string]string{"small": "m", "big": "held"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, least := range []bool{true, false} {
				snap := &scheduling.Snapshot{Nodes: tc.nodes, Pods: tc.pods}
				plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{LeastAllocated: least, Bound: scheduling.BoundNone})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				for _, p := range plan.Placements {
					got[p.Pod.Name] = p.Node
				}
				want := tc.planned
				if least {
					want = tc.least
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("LeastAllocated=%v: placements (-want +got):\n%s", least, d)
				}
				if v := oracle.Check(snap, plan); len(v) > 0 {
					t.Errorf("LeastAllocated=%v: %s", least, v[0])
				}
			}
		})
	}
}

// TestLeastAllocatedRefusesNodePools: new capacity is not what the option is for.
func TestLeastAllocatedRefusesNodePools(t *testing.T) {
	snap := &scheduling.Snapshot{NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()}}
	_, err := scheduling.Solve(context.Background(), snap, scheduling.Options{LeastAllocated: true})
	if err == nil || !strings.Contains(err.Error(), "existing nodes only") {
		t.Fatalf("Solve = %v, want an error naming existing nodes only", err)
	}
}

// TestLeastAllocatedPassesOracle places the pods of seeded random workloads, every constraint family mixed, on
// their existing nodes and three empty ones, the kube-scheduler's way, and checks every placement with the oracle.
func TestLeastAllocatedPassesOracle(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 50
	}
	placed := 0
	for seed := 0; seed < cases; seed++ {
		snap := scheduletest.RandomSnapshot(rand.New(rand.NewSource(int64(seed))))
		// The snapshot's nodes and a few empty ones, no NodePools.
		existing := *snap
		existing.NodePools, existing.InstanceTypes = nil, nil
		existing.Nodes = append([]*scheduling.StateNode(nil), snap.Nodes...)
		for i, z := range zonesAll {
			existing.Nodes = append(existing.Nodes, test.SchedNode("empty-"+z, strconv.Itoa(4<<i), strconv.Itoa(16<<i)+"Gi").Zone(z).
				Label(corev1.LabelArchStable, []string{"amd64", "arm64"}[(seed+i)%2]).Obj())
		}
		got, err := scheduling.Solve(context.Background(), &existing, scheduling.Options{LeastAllocated: true, Bound: scheduling.BoundNone})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(got.NodeClaims) > 0 {
			t.Fatalf("seed %d: %d new NodeClaims planned without NodePools", seed, len(got.NodeClaims))
		}
		if v := oracle.Check(&existing, got); len(v) > 0 {
			t.Errorf("seed %d: %d violations, first: %s", seed, len(v), v[0])
		}
		placed += len(got.Placements)
	}
	t.Logf("%d cases, %d pods placed", cases, placed)
}
