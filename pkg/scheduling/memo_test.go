package scheduling_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail/dovetail/pkg/disruption/disruptiontest"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestMemoKeepsPlans solves series of related snapshots the way a disruption decision simulates them (the same
// snapshot with one more existing node removed each time and its pods pending; then a pod asking for a new
// resource, then no DaemonSets: the memo must start over) with one memo shared by every solve of every series, and
// without a memo: the plans must be the same. Series of different random snapshots share the
// memo too, so it also sees other dimensions, DaemonSets, NodePools and instance types than the last solve's.
func TestMemoKeepsPlans(t *testing.T) {
	ctx := context.Background()
	memo := scheduling.NewMemo()
	solves := 0
	for seed := 0; seed < 300; seed++ {
		r := rand.New(rand.NewSource(int64(seed)))
		snap := scheduletest.RandomSnapshot(r)
		for step := 0; ; step++ {
			name := fmt.Sprintf("seed %d, step %d", seed, step)
			want, got, _ := solveBoth(t, ctx, snap, memo)
			solves++
			samePlan(t, name, want, got)
			if step == 4 {
				break
			}
			switch {
			case step == 2:
				// a pod asking for a resource nothing else names: the solve's dimensions change
				next := *snap
				next.Pods = append(append([]*corev1.Pod(nil), snap.Pods...),
					test.SchedPod(fmt.Sprintf("widget-%d", seed)).Requests("100m", "128Mi").Request("example.com/widget", "1").Obj())
				snap = &next
			case step == 3 && len(snap.DaemonSets) > 0:
				// the same NodePools and instance types without the DaemonSets: their overhead changes
				next := *snap
				next.DaemonSets = nil
				snap = &next
			case len(snap.Nodes) > 0:
				snap = withoutNode(snap, r.Intn(len(snap.Nodes)))
			}
		}
	}
	hits, misses := memo.Lookups()
	if hits == 0 {
		t.Fatalf("%d solves with the memo found nothing in it (%d misses): the memo is not used", solves, misses)
	}
	t.Logf("%d solves, memo hits %d, misses %d", solves, hits, misses)
}

// withoutNode returns a copy of snap without its i-th existing node, whose pods are pending again (copied, with no
// node name), beside the snapshot's other pending pods. Nothing snap holds is changed.
func withoutNode(snap *scheduling.Snapshot, i int) *scheduling.Snapshot {
	out := *snap
	out.Nodes = append(append([]*scheduling.StateNode(nil), snap.Nodes[:i]...), snap.Nodes[i+1:]...)
	out.Pods = append([]*corev1.Pod(nil), snap.Pods...)
	for _, p := range snap.Nodes[i].Pods {
		moved := p.DeepCopy()
		moved.Spec.NodeName = ""
		out.Pods = append(out.Pods, moved)
	}
	return &out
}

// TestMemoPrune: a memo kept across solves of changing clusters (the provisioning controller's, from pass to pass)
// serves the pods still bound from the last solve and, after Prune, holds only the pods the solves since the last
// Prune looked up; the plans are those of solves without a memo.
func TestMemoPrune(t *testing.T) {
	ctx := context.Background()
	base, err := disruptiontest.Packed(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	snap := *base.Cluster
	snap.Pods = []*corev1.Pod{test.SchedPod("pending").Requests("1", "1Gi").Obj()}
	bound := 0
	for _, n := range snap.Nodes {
		bound += len(n.Pods)
	}
	memo := scheduling.NewMemo()
	solve := func(s *scheduling.Snapshot) {
		t.Helper()
		want, got, _ := solveBoth(t, ctx, s, memo)
		samePlan(t, "solve", want, got)
	}
	solve(&snap)
	memo.Prune()
	if got := memo.PodEntries(); got != bound {
		t.Fatalf("after the first solve: %d pods in the memo, want the %d bound", got, bound)
	}
	// The next pass: the first node gone, the second's pods changed (new objects); every other pod as it was.
	next := snap
	next.Nodes = slices.Clone(snap.Nodes[1:])
	changed := *next.Nodes[0]
	changed.Pods = nil
	for _, p := range next.Nodes[0].Pods {
		changed.Pods = append(changed.Pods, p.DeepCopy())
	}
	next.Nodes[0] = &changed
	hitsBefore, _ := memo.Lookups()
	solve(&next)
	hits, _ := memo.Lookups()
	kept := bound - len(snap.Nodes[0].Pods) - len(changed.Pods)
	if hits-hitsBefore < kept {
		t.Errorf("the second solve found %d entries, want at least the %d unchanged pods", hits-hitsBefore, kept)
	}
	memo.Prune()
	if got, want := memo.PodEntries(), bound-len(snap.Nodes[0].Pods); got != want {
		t.Errorf("after Prune: %d pods in the memo, want the %d still bound", got, want)
	}
}

// TestMemoAntiTerms: the groups of bound pods' required anti-affinity terms come from the memo on later solves
// and keep pending pods they match off those pods' nodes, as they do without a memo; the pending pods here have
// no anti-affinity of their own, so only the bound pods' terms keep them off.
func TestMemoAntiTerms(t *testing.T) {
	ctx := context.Background()
	base, err := disruptiontest.Packed(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	snap := *base.Cluster
	snap.Nodes = slices.Clone(snap.Nodes)
	for i, n := range snap.Nodes {
		c := *n
		c.Pods = slices.Clone(n.Pods)
		// The first pod's room is mostly freed: a small pod that keeps other db pods off its node.
		db := test.SchedPod(fmt.Sprintf("db-%d", i)).Labels("app", "db").Requests("100m", "128Mi").
			PodAntiAffinity(corev1.LabelHostname, "app", "db").Obj()
		db.Spec.NodeName = n.Name
		c.Pods[0] = db
		snap.Nodes[i] = &c
	}
	snap.Pods = []*corev1.Pod{
		test.SchedPod("db-new-0").Labels("app", "db").Requests("100m", "128Mi").Obj(),
		test.SchedPod("db-new-1").Labels("app", "db").Requests("100m", "128Mi").Obj(),
		test.SchedPod("web").Labels("app", "web").Requests("100m", "128Mi").Obj(),
	}
	memo := scheduling.NewMemo()
	want, err := scheduling.Solve(ctx, &snap, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	onExisting := map[string]string{}
	for _, p := range want.Placements {
		for _, n := range snap.Nodes {
			if n.Name == p.Node {
				onExisting[p.Pod.Name] = p.Node
			}
		}
	}
	if onExisting["db-new-0"] != "" || onExisting["db-new-1"] != "" || onExisting["web"] == "" {
		t.Fatalf("pods placed on existing nodes: %v; want only web there (the db pods kept off by the bound pods' anti-affinity)", onExisting)
	}
	for pass := range 2 {
		hitsBefore, _ := memo.Lookups()
		got, err := scheduling.Solve(ctx, &snap, scheduling.Options{Memo: memo})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, cmpopts.IgnoreFields(scheduling.Plan{}, "Duration", "BoundDuration")); d != "" {
			t.Fatalf("pass %d: plans differ (-without memo +with):\n%s", pass, d)
		}
		if got := memo.AntiEntries(); got != len(snap.Nodes) {
			t.Errorf("pass %d: %d pods' anti-affinity groups in the memo, want %d", pass, got, len(snap.Nodes))
		}
		if hits, _ := memo.Lookups(); pass == 1 && hits-hitsBefore < 2*len(snap.Nodes) {
			t.Errorf("second solve: %d memo hits, want at least the bound pods' requests and anti-affinity groups (%d)", hits-hitsBefore, 2*len(snap.Nodes))
		}
		memo.Prune()
	}
}

// TestMemoAlternatingDims: solves whose resource dimensions differ, in turn (a disruption pass's drain checks,
// without NodePools, and its extra capacity solves, whose instance types bring more), each find the bound pods'
// requests the last solve of their own dimensions left, and plan as they do without a memo.
func TestMemoAlternatingDims(t *testing.T) {
	ctx := context.Background()
	base, err := disruptiontest.Packed(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	plain := *base.Cluster
	plain.Pods = []*corev1.Pod{test.SchedPod("pending").Requests("1", "1Gi").Obj()}
	extended := plain
	extended.Pods = []*corev1.Pod{test.SchedPod("device").Requests("1", "1Gi").Request("example.com/device", "1").Obj()}
	bound := 0
	for _, n := range plain.Nodes {
		bound += len(n.Pods)
	}
	memo := scheduling.NewMemo()
	for i, s := range []*scheduling.Snapshot{&plain, &extended, &plain, &extended} {
		want, got, hits := solveBoth(t, ctx, s, memo)
		samePlan(t, fmt.Sprintf("solve %d", i), want, got)
		if i >= 2 && hits < bound {
			t.Errorf("solve %d: %d memo hits, want at least the %d bound pods' requests kept from solve %d", i, hits, bound, i-2)
		}
	}
}

// TestMemoBoundPodsFollowPodList: what a node's bound pods add up to is kept for the node's pod list, and a node
// given another list, as code deriving snapshots does in place (the provisioner pins pods to in-flight NodeClaims
// that way), is added up again: a memo that kept the old sum would place a pod on a node now full.
func TestMemoBoundPodsFollowPodList(t *testing.T) {
	ctx := context.Background()
	filler := test.SchedPod("filler").Requests("3", "3Gi").Obj()
	filler.Spec.NodeName = "n1"
	node := test.SchedNode("n1", "4", "4Gi").Zone("zone-a").Obj()
	snap := &scheduling.Snapshot{
		Nodes: []*scheduling.StateNode{node},
		Pods:  []*corev1.Pod{test.SchedPod("web").Requests("2", "2Gi").Obj()},
	}
	memo := scheduling.NewMemo()
	onNode := func(p *scheduling.Plan) bool {
		for _, pl := range p.Placements {
			if pl.Pod.Name == "web" && pl.Node == "n1" {
				return true
			}
		}
		return false
	}
	for i, tc := range []struct {
		pods []*corev1.Pod
		want bool
	}{
		{pods: nil, want: true},
		{pods: nil, want: true}, // the same list: from the memo
		{pods: []*corev1.Pod{filler}, want: false},
		{pods: []*corev1.Pod{}, want: true},
		{pods: []*corev1.Pod{filler}, want: false},
	} {
		node.Pods = tc.pods
		without, got, hits := solveBoth(t, ctx, snap, memo)
		samePlan(t, fmt.Sprintf("solve %d", i), without, got)
		if onNode(without) != tc.want || onNode(got) != tc.want {
			t.Errorf("solve %d (%d bound pods): web on n1 without a memo %v, with one %v; want %v", i, len(tc.pods), onNode(without), onNode(got), tc.want)
		}
		if i == 1 && hits == 0 {
			t.Errorf("solve %d: no memo hit for an unchanged node", i)
		}
	}
}

// TestBoundPodsMatchByNamespace: bound pods with the same labels in two namespaces share no label set: a required
// anti-affinity term (which looks in the pod's own namespace) keeps a pod off the node of its namespace's match only.
func TestBoundPodsMatchByNamespace(t *testing.T) {
	ctx := context.Background()
	var nodes []*scheduling.StateNode
	for _, ns := range []string{"other", "default", "third"} {
		p := test.SchedPod("db-"+ns).Namespace(ns).Labels("app", "db").Requests("100m", "128Mi").Obj()
		p.Spec.NodeName = "n-" + ns
		nodes = append(nodes, test.SchedNode("n-"+ns, "4", "4Gi").Zone("zone-a").Pods(p).Obj())
	}
	var pending []*corev1.Pod
	for i := range 3 {
		pending = append(pending, test.SchedPod(fmt.Sprintf("db-new-%d", i)).Labels("app", "db").Requests("100m", "128Mi").
			PodAntiAffinity(corev1.LabelHostname, "app", "db").Obj())
	}
	for _, memo := range []*scheduling.Memo{nil, scheduling.NewMemo()} {
		plan, err := scheduling.Solve(ctx, &scheduling.Snapshot{Nodes: nodes, Pods: pending}, scheduling.Options{Memo: memo})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, pl := range plan.Placements {
			got[pl.Node]++
		}
		if d := cmp.Diff(map[string]int{"n-other": 1, "n-third": 1}, got); d != "" {
			t.Errorf("memo %v: placements on nodes (-want +got):\n%s", memo != nil, d)
		}
		if len(plan.Unschedulable) != 1 {
			t.Errorf("memo %v: %d pods unschedulable, want 1 (no NodePool; the default namespace's node holds a match)", memo != nil, len(plan.Unschedulable))
		}
	}
}

// solveBoth solves snap without a memo and with memo, failing the test on an error; hits are the memo's hits in
// its solve.
func solveBoth(t *testing.T, ctx context.Context, snap *scheduling.Snapshot, memo *scheduling.Memo) (without, with *scheduling.Plan, hits int) {
	t.Helper()
	without, err := scheduling.Solve(ctx, snap, scheduling.Options{})
	if err != nil {
		t.Fatalf("solve without a memo: %v", err)
	}
	before, _ := memo.Lookups()
	with, err = scheduling.Solve(ctx, snap, scheduling.Options{Memo: memo})
	if err != nil {
		t.Fatalf("solve with a memo: %v", err)
	}
	after, _ := memo.Lookups()
	return without, with, after - before
}

// samePlan fails the test when the plans made without and with a memo differ (but for their durations).
func samePlan(t *testing.T, what string, without, with *scheduling.Plan) {
	t.Helper()
	if d := cmp.Diff(without, with, cmpopts.IgnoreFields(scheduling.Plan{}, "Duration", "BoundDuration")); d != "" {
		t.Fatalf("%s: plans differ (-without memo +with):\n%s", what, d)
	}
}

// TestMemoExtendedResources: with the extended resources of the nodes' allocatable kept by the memo, the solves
// after the first place as a solve without a memo does: a pod requesting a GPU goes to the node that has one, and
// when only a node with none is left it waits.
func TestMemoExtendedResources(t *testing.T) {
	ctx := context.Background()
	gpu := test.SchedNode("gpu", "8", "32Gi").Obj()
	gpu.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	plain := test.SchedNode("plain", "8", "32Gi").Obj()
	pod := test.SchedPod("train").Requests("1", "1Gi").Request("nvidia.com/gpu", "1").Obj()
	memo := scheduling.NewMemo()
	for _, tc := range []struct {
		name  string
		nodes []*scheduling.StateNode
		want  string // the node the pod goes to, "" for none
	}{
		{"both nodes", []*scheduling.StateNode{plain, gpu}, "gpu"},
		{"the same nodes again", []*scheduling.StateNode{plain, gpu}, "gpu"},
		{"the plain node alone", []*scheduling.StateNode{plain}, ""},
		{"both again", []*scheduling.StateNode{gpu, plain}, "gpu"},
	} {
		without, with, _ := solveBoth(t, ctx, &scheduling.Snapshot{Nodes: tc.nodes, Pods: []*corev1.Pod{pod}}, memo)
		for name, plan := range map[string]*scheduling.Plan{"without a memo": without, "with the memo": with} {
			got := ""
			for _, pl := range plan.Placements {
				got = pl.Node
			}
			if got != tc.want {
				t.Errorf("%s, %s: pod placed on %q, want %q (unschedulable %v)", tc.name, name, got, tc.want, plan.Unschedulable)
			}
		}
	}
}
