package disruption_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/test"
)

// pools is a decision snapshot like world's, with several NodePools (each may launch the catalog).
func pools(nps []*karpv1.NodePool, cands ...*disruption.Candidate) *disruption.Snapshot {
	s := world(nps[0], cands...)
	s.Cluster.NodePools = nil
	s.NodeCounts = map[string]int{}
	for _, np := range nps {
		s.NodePools[np.Name] = np
		s.Cluster.NodePools = append(s.Cluster.NodePools, test.SchedNodePool(np.Name).Obj())
		s.Cluster.InstanceTypes[np.Name] = catalog()
	}
	for _, c := range cands {
		s.NodeCounts[c.NodePool]++
	}
	return s
}

// keeper is a do-not-disrupt pod of the given cpu: its node stays and offers the rest of its room.
func keeper(name, cpu string) *corev1.Pod {
	p := pod(name, cpu)
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	return p
}

// passSummary is every command of a pass in one line each and every stay's reason.
type passSummary struct {
	Commands []string
	Stays    map[string]disruption.StayReason
}

func summarizePass(t *testing.T, r *disruption.Result) passSummary {
	t.Helper()
	s := passSummary{Stays: map[string]disruption.StayReason{}}
	inCommand := map[string]bool{}
	for _, c := range r.Commands {
		s.Commands = append(s.Commands, c.Message())
		for _, cand := range c.Candidates {
			if inCommand[cand.NodeClaim] {
				t.Errorf("candidate %s is in two commands", cand.NodeClaim)
			}
			inCommand[cand.NodeClaim] = true
		}
	}
	for _, st := range r.Stays {
		if inCommand[st.NodeClaim] {
			t.Errorf("candidate %s is in a command and has a stay %s", st.NodeClaim, st.Reason)
		}
		s.Stays[st.NodeClaim] = st.Reason
	}
	if len(r.Commands) > 0 && r.Command != r.Commands[0] {
		t.Errorf("Command is not Commands[0]")
	}
	if len(r.Commands) == 0 && r.Command != nil {
		t.Errorf("Command without Commands")
	}
	return s
}

// checkPass checks the pass's commands together with the scheduling oracle: every moved pod placed, on a node
// that would accept it with every other moved pod in place.
func checkPass(t *testing.T, snap *disruption.Snapshot, r *disruption.Result) {
	t.Helper()
	cluster, plan := disruption.PassPlan(snap.Cluster, r.Commands)
	for _, v := range oracle.Check(cluster, plan) {
		t.Errorf("oracle: %s", v)
	}
}

// bigDrifted is a drifted medium node whose pod fits on no small node.
func bigDrifted(name, pool string) *disruption.Candidate {
	return test.Candidate(name, "medium", 0.2).Pool(pool).Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod(name+"-web", "3")).Obj()
}

func drifted(name, pool string) *disruption.Candidate {
	return test.Candidate(name, "small", 0.1).Pool(pool).Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod(name+"-web", "1500m")).Obj()
}

func TestDecideSeveralCommands(t *testing.T) {
	cases := []struct {
		name string
		snap func() *disruption.Snapshot
		opts disruption.Options
		want passSummary
		// savings and evictions of the pass
		savings   float64
		evictions int
	}{
		{
			name: "two NodePools replace drifted nodes in parallel, each within its own budget",
			snap: func() *disruption.Snapshot {
				return pools([]*karpv1.NodePool{test.NodePool("a").Budget("1").Obj(), test.NodePool("b").Budget("2").Obj()},
					drifted("a1", "a"), drifted("a2", "a"), drifted("a3", "a"), drifted("b1", "b"), drifted("b2", "b"), drifted("b3", "b"))
			},
			want: passSummary{
				Commands: []string{"drifted/replace: 1 node(s) a1, replaced by small", "drifted/replace: 1 node(s) b1, replaced by small",
					"drifted/replace: 1 node(s) b2, replaced by small"},
				Stays: map[string]disruption.StayReason{"a2": disruption.StayBudget, "a3": disruption.StayBudget, "b3": disruption.StayBudget}},
			evictions: 3,
		},
		{
			name: "a cap on drift commands leaves the other drifted nodes for a later pass",
			snap: func() *disruption.Snapshot {
				np := test.NodePool("a").Budget("100%", karpv1.DisruptionReasonDrifted).Budget("0", karpv1.DisruptionReasonUnderutilized).Obj()
				return pools([]*karpv1.NodePool{np}, drifted("a1", "a"), drifted("a2", "a"), drifted("a3", "a"), drifted("a4", "a"))
			},
			opts: disruption.Options{MaxDriftCommands: 2},
			want: passSummary{
				Commands: []string{"drifted/replace: 1 node(s) a1, replaced by small", "drifted/replace: 1 node(s) a2, replaced by small"},
				Stays:    map[string]disruption.StayReason{"a3": disruption.StayNotExamined, "a4": disruption.StayNotExamined}},
			evictions: 2,
		},
		{
			name: "nodes already disrupting use up the budget",
			snap: func() *disruption.Snapshot {
				s := pools([]*karpv1.NodePool{test.NodePool("a").Budget("2").Obj()}, drifted("a1", "a"), drifted("a2", "a"), drifted("a3", "a"))
				s.Disrupting = map[string]int{"a": 1}
				return s
			},
			want: passSummary{Commands: []string{"drifted/replace: 1 node(s) a1, replaced by small"},
				Stays: map[string]disruption.StayReason{"a2": disruption.StayBudget, "a3": disruption.StayBudget}},
			evictions: 1,
		},
		{
			name: "a drift command uses up allowance of the other reasons too",
			snap: func() *disruption.Snapshot {
				return pools([]*karpv1.NodePool{test.NodePool("a").Budget("2").Obj()}, bigDrifted("a1", "a"),
					test.Candidate("e1", "small", 0.1).Pool("a").Obj(), test.Candidate("e2", "small", 0.1).Pool("a").Obj())
			},
			want: passSummary{Commands: []string{"drifted/replace: 1 node(s) a1, replaced by medium", "empty/delete (empty): 1 node(s) e1, saving $0.1000/h"},
				Stays: map[string]disruption.StayReason{"e2": disruption.StayBudget}},
			savings: 0.1, evictions: 1,
		},
		{
			name: "budgets per reason: no drift, one empty node, any underutilized (the drifted node is consolidated)",
			snap: func() *disruption.Snapshot {
				np := test.NodePool("a").Budget("0", karpv1.DisruptionReasonDrifted).Budget("1", karpv1.DisruptionReasonEmpty).Obj()
				return pools([]*karpv1.NodePool{np}, bigDrifted("a1", "a"),
					test.Candidate("e1", "small", 0.1).Pool("a").Obj(), test.Candidate("e2", "small", 0.1).Pool("a").Obj())
			},
			want: passSummary{Commands: []string{"empty/delete (empty): 1 node(s) e1, saving $0.1000/h",
				"underutilized/replace (single): 1 node(s) a1, replaced by medium, saving $0.0800/h"},
				Stays: map[string]disruption.StayReason{"e2": disruption.StayBudget}},
			savings: 0.18, evictions: 1,
		},
		{
			name: "budgets per reason: drift blocked, so emptiness takes the drifted empty node",
			snap: func() *disruption.Snapshot {
				np := test.NodePool("a").Budget("0", karpv1.DisruptionReasonDrifted).Obj()
				return pools([]*karpv1.NodePool{np}, test.Candidate("d1", "small", 0.1).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Obj(),
					test.Candidate("e1", "small", 0.1).Pool("a").Obj())
			},
			want:    passSummary{Commands: []string{"empty/delete (empty): 2 node(s) d1, e1, saving $0.2000/h"}, Stays: map[string]disruption.StayReason{}},
			savings: 0.2,
		},
		{
			name: "single-node consolidation goes on after a command, onto different spare room",
			snap: func() *disruption.Snapshot {
				return pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("s1", "medium", 0.2).Pool("a").Pods(keeper("k1", "2")).Obj(),
					test.Candidate("s2", "medium", 0.2).Pool("a").Pods(keeper("k2", "2")).Obj(),
					test.Candidate("x", "small", 0.05).Pool("a").Pods(pod("x-web", "1500m")).Obj(),
					test.Candidate("y", "small", 0.05).Pool("a").Pods(pod("y-web", "1500m")).Obj())
			},
			opts: disruption.Options{MaxMultiNodeCandidates: 1},
			want: passSummary{Commands: []string{"underutilized/delete (single): 1 node(s) x, saving $0.0500/h", "underutilized/delete (single): 1 node(s) y, saving $0.0500/h"},
				Stays: map[string]disruption.StayReason{"s1": disruption.StayDoNotDisrupt, "s2": disruption.StayDoNotDisrupt}},
			savings: 0.1, evictions: 2,
		},
		{
			name: "a PodDisruptionBudget's allowance is not counted on by two commands",
			snap: func() *disruption.Snapshot {
				web := func(name string) *corev1.Pod {
					return test.SchedPod(name).Labels("app", "web").Requests("1500m", "1Gi").Obj()
				}
				s := pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("s1", "medium", 0.2).Pool("a").Pods(keeper("k1", "2")).Obj(),
					test.Candidate("s2", "medium", 0.2).Pool("a").Pods(keeper("k2", "2")).Obj(),
					test.Candidate("x", "small", 0.05).Pool("a").Pods(web("x-web")).Obj(),
					test.Candidate("y", "small", 0.05).Pool("a").Pods(web("y-web")).Obj())
				s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, pdb("web", 1))
				return s
			},
			opts: disruption.Options{MaxMultiNodeCandidates: 1},
			want: passSummary{Commands: []string{"underutilized/delete (single): 1 node(s) x, saving $0.0500/h"},
				Stays: map[string]disruption.StayReason{"s1": disruption.StayDoNotDisrupt, "s2": disruption.StayDoNotDisrupt, "y": disruption.StayPDB}},
			savings: 0.05, evictions: 1,
		},
		{
			name: "two nodes that could each move onto the same spare room: only one command gets it",
			snap: func() *disruption.Snapshot {
				return pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("s", "large", 0.4).Pool("a").Pods(keeper("k", "6")).Obj(),
					test.Candidate("x", "small", 0.03).Pool("a").Pods(pod("x-web", "1500m")).Obj(),
					test.Candidate("y", "small", 0.03).Pool("a").Pods(pod("y-web", "1500m")).Obj())
			},
			want: passSummary{Commands: []string{"underutilized/delete (single): 1 node(s) x, saving $0.0300/h"},
				Stays: map[string]disruption.StayReason{"s": disruption.StayDoNotDisrupt, "y": disruption.StayNoCheaper}},
			savings: 0.03, evictions: 1,
		},
		{
			name: "a replacement of an earlier command is not room for a later one",
			snap: func() *disruption.Snapshot {
				// d1's pod fits on no node (d2 runs a large DaemonSet pod): it gets a small replacement with 300m to
				// spare. d2's pod would fit in that room, but it must not be planned onto it.
				ds := pod("d2-agent", "1600m")
				ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: ptrTrue()}}
				return pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("d1", "small", 0.1).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("d1-web", "1700m")).Obj(),
					test.Candidate("d2", "small", 0.1).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(ds, pod("d2-web", "250m")).Obj())
			},
			want: passSummary{Commands: []string{"drifted/replace: 1 node(s) d1, replaced by small", "drifted/replace: 1 node(s) d2, replaced by small"},
				Stays: map[string]disruption.StayReason{}},
			evictions: 2,
		},
		{
			name: "a drifted node's pods do not go onto another drifted node",
			snap: func() *disruption.Snapshot {
				return pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("d1", "medium", 0.2).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("d1-web", "1")).Obj(),
					test.Candidate("d2", "medium", 0.2).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("d2-web", "1")).Obj())
			},
			want: passSummary{Commands: []string{"drifted/replace: 1 node(s) d1, replaced by small", "drifted/replace: 1 node(s) d2, replaced by small"},
				Stays: map[string]disruption.StayReason{}},
			evictions: 2,
		},
		{
			name: "... unless there is no other way (the NodePool may launch no node)",
			snap: func() *disruption.Snapshot {
				s := pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("d1", "medium", 0.2).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("d1-web", "1")).Obj(),
					test.Candidate("d2", "medium", 0.2).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("d2-web", "1")).Obj())
				s.Cluster.NodePools = []*scheduling.NodePool{test.SchedNodePool("a").Limit(scheduling.ResourceNodes, "2").Usage(scheduling.ResourceNodes, "2").Obj()}
				return s
			},
			want: passSummary{Commands: []string{"drifted/delete: 1 node(s) d1"},
				Stays: map[string]disruption.StayReason{"d2": disruption.StayReceiving}},
			evictions: 1,
		},
		{
			name: "a node an earlier command moves pods onto is left for the next pass",
			snap: func() *disruption.Snapshot {
				// d's pod goes onto u (the only room); u is then not consolidated in the same pass.
				return pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
					test.Candidate("d", "small", 0.1).Pool("a").Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("d-web", "1")).Obj(),
					test.Candidate("u", "large", 0.4).Pool("a").Pods(pod("u-web", "1")).Obj())
			},
			want: passSummary{Commands: []string{"drifted/delete: 1 node(s) d"},
				Stays: map[string]disruption.StayReason{"u": disruption.StayReceiving}},
			evictions: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.snap()
			before := fmt.Sprint(len(snap.Cluster.Nodes), nodePods(snap.Cluster))
			r, err := disruption.Decide(context.Background(), snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarizePass(t, r)); diff != "" {
				t.Errorf("pass (-want +got):\n%s", diff)
			}
			if math.Abs(r.SavingsPerHour-tc.savings) > 1e-9 || r.Evictions != tc.evictions {
				t.Errorf("savings %.4f $/h, evictions %d; want %.4f, %d", r.SavingsPerHour, r.Evictions, tc.savings, tc.evictions)
			}
			checkPass(t, snap, r)
			if after := fmt.Sprint(len(snap.Cluster.Nodes), nodePods(snap.Cluster)); after != before {
				t.Errorf("Decide modified its input cluster: %s, was %s", after, before)
			}
		})
	}
}

// nodePods fingerprints the parts of the cluster a pass could modify: nodes, their room and pods, NodePool usage.
func nodePods(c *scheduling.Snapshot) []string {
	var out []string
	for _, n := range c.Nodes {
		cpu := n.Allocatable[corev1.ResourceCPU]
		pods := n.Allocatable[corev1.ResourcePods]
		line := fmt.Sprintf("%s cpu=%s pods=%s:", n.Name, cpu.String(), pods.String())
		for _, p := range n.Pods {
			line += " " + p.Name + "@" + p.Spec.NodeName
		}
		out = append(out, line)
	}
	for _, np := range c.NodePools {
		out = append(out, fmt.Sprintf("%s usage %v", np.Name, np.Usage))
	}
	return out
}

// TestSpareRoomIsContested shows the room in the consistency case is what decides: without x, y alone would be
// deleted onto it.
func TestSpareRoomIsContested(t *testing.T) {
	snap := pools([]*karpv1.NodePool{test.NodePool("a").Obj()},
		test.Candidate("s", "large", 0.4).Pool("a").Pods(keeper("k", "6")).Obj(),
		test.Candidate("y", "small", 0.03).Pool("a").Pods(pod("y-web", "1500m")).Obj())
	r, err := disruption.Decide(context.Background(), snap, disruption.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Command == nil || r.Command.Message() != "underutilized/delete (single): 1 node(s) y, saving $0.0300/h" {
		t.Fatalf("y alone is not deleted onto the spare room: %+v", summarizePass(t, r))
	}
}

// TestTailFairness: with a multi-node cap smaller than the candidates, passes that feed Result.Examined back
// examine every candidate within ceil(n/cap) passes.
func TestTailFairness(t *testing.T) {
	const n, limit = 7, 3
	var cands []*disruption.Candidate
	for i := range n {
		// Full small nodes: nothing to consolidate, alone or together.
		cands = append(cands, test.Candidate(fmt.Sprintf("n%d", i), "small", 0.05).Pods(pod(fmt.Sprintf("w%d", i), "1500m")).Obj())
	}
	examined := map[string]time.Time{}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	passes := (n + limit - 1) / limit
	for pass := range passes {
		s := world(nil, cands...)
		s.Now = now.Add(time.Duration(pass) * time.Minute)
		s.Examined = examined
		r, err := disruption.Decide(context.Background(), s, disruption.Options{MaxMultiNodeCandidates: limit})
		if err != nil {
			t.Fatal(err)
		}
		fresh := 0
		for name, at := range r.Examined {
			if at.Equal(s.Now) {
				seen[name] = true
				fresh++
			}
		}
		if fresh > limit {
			t.Errorf("pass %d examined %d candidates with a cap of %d", pass, fresh, limit)
		}
		examined = r.Examined
	}
	if len(seen) != n {
		t.Errorf("after %d passes %d of %d candidates were examined: %v", passes, len(seen), n, seen)
	}
}
