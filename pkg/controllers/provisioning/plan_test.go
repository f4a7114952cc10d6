package provisioning

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/test"
)

func pendingPod(name, nominated string) *corev1.Pod {
	p := test.Pod(name).Obj()
	p.UID = types.UID("uid-" + name)
	p.Status.NominatedNodeName = nominated
	return p
}

func TestNominationsFollowThePlan(t *testing.T) {
	// claim-a has registered as node-a; claim-b has no node yet; claim-d's Node node-d exists but has not
	// registered; node-c is a node of its own.
	claimD := test.NodeClaim("claim-d", "default").ProviderID("aws:///z/i-d").Obj()
	in := solver.Input{
		Nodes: []solver.ExistingNode{{Node: test.Node("node-a", "aws:///z/i-a").Obj()}, {Node: test.Node("node-c", "aws:///z/i-c").Obj()},
			{Node: test.Node("node-d", "aws:///z/i-d").Obj(), NodeClaim: claimD}},
		InFlight: []solver.InFlightClaim{
			{NodeClaim: test.NodeClaim("claim-a", "default").NodeName("node-a").Obj()},
			{NodeClaim: test.NodeClaim("claim-b", "default").Obj()},
			{NodeClaim: claimD},
		},
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		planned string // "" means a new NodeClaim or unschedulable
		ours    string
		want    []string // node the pod's nomination changes to, if it changes
	}{
		{name: "planned on a registered claim: its node", pod: pendingPod("p1", ""), planned: "claim-a", want: []string{"node-a"}},
		{name: "planned on a node", pod: pendingPod("p2", ""), planned: "node-c", want: []string{"node-c"}},
		{name: "planned on a claim without a node yet: nothing", pod: pendingPod("p3", ""), planned: "claim-b"},
		{name: "planned on a claim whose node has not registered: nothing", pod: pendingPod("p9", ""), planned: "claim-d"},
		{name: "plan moved to a claim without a node: our nomination is cleared", pod: pendingPod("p10", "node-a"), planned: "claim-d", ours: "node-a", want: []string{""}},
		{name: "already nominated where planned: no write", pod: pendingPod("p4", "node-a"), planned: "claim-a", ours: "node-a"},
		{name: "plan moved: our nomination follows", pod: pendingPod("p5", "node-a"), planned: "node-c", ours: "node-a", want: []string{"node-c"}},
		{name: "plan moved to a new claim: our nomination is cleared", pod: pendingPod("p6", "node-a"), planned: "", ours: "node-a", want: []string{""}},
		{name: "someone else's nomination is left alone", pod: pendingPod("p7", "node-x"), planned: "claim-a"},
		{name: "someone else's replaced ours: left alone", pod: pendingPod("p8", "node-x"), planned: "", ours: "node-a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			in.Pods = []*corev1.Pod{tc.pod}
			plan := solver.Plan{Existing: map[string]string{}}
			if tc.planned != "" {
				plan.Existing[solver.PodKey(tc.pod)] = tc.planned
			}
			ours := map[types.UID]string{}
			if tc.ours != "" {
				ours[tc.pod.UID] = tc.ours
			}
			changes := nominations(in, plan, ours, 0)
			var got []string
			for _, c := range changes {
				got = append(got, c.node)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("nomination changes (-want +got):\n%s", d)
			}
		})
	}
}

// With a nomination budget of two nodes, the nodes keeping nominations of ours count first; new nominations go
// to further nodes only while the budget lasts (in the order of the pods), to the nodes already counted always,
// and a pod whose plan moved to a node past the budget has our nomination cleared.
func TestNominationsWithinBudget(t *testing.T) {
	var nodes []solver.ExistingNode
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4"} {
		nodes = append(nodes, solver.ExistingNode{Node: test.Node(n, "aws:///z/i-"+n).Obj()})
	}
	kept := pendingPod("a-kept", "node-3")
	fresh1, fresh2, fresh3 := pendingPod("b-fresh", ""), pendingPod("c-fresh", ""), pendingPod("d-fresh", "")
	moved := pendingPod("e-moved", "node-2")
	in := solver.Input{Pods: []*corev1.Pod{kept, fresh1, fresh2, fresh3, moved}, Nodes: nodes}
	plan := solver.Plan{Existing: map[string]string{
		solver.PodKey(kept): "node-3", solver.PodKey(fresh1): "node-1", solver.PodKey(fresh2): "node-3",
		solver.PodKey(fresh3): "node-4", solver.PodKey(moved): "node-4",
	}}
	ours := map[types.UID]string{kept.UID: "node-3", moved.UID: "node-2"}
	cases := []struct {
		budget int
		want   map[string]string
	}{
		// node-3 kept; node-1 the second; node-3 again for c; node-4 past the budget: d not nominated, e cleared.
		{budget: 2, want: map[string]string{"b-fresh": "node-1", "c-fresh": "node-3", "e-moved": ""}},
		{budget: 3, want: map[string]string{"b-fresh": "node-1", "c-fresh": "node-3", "d-fresh": "node-4", "e-moved": "node-4"}},
		{budget: 0, want: map[string]string{"b-fresh": "node-1", "c-fresh": "node-3", "d-fresh": "node-4", "e-moved": "node-4"}},
	}
	for _, tc := range cases {
		got := map[string]string{}
		for _, ch := range nominations(in, plan, ours, tc.budget) {
			got[ch.pod.Name] = ch.node
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("budget %d: nomination changes (-want +got):\n%s", tc.budget, diff)
		}
	}
}

// Pods of a zone spread planned together on one node: only as many are nominated there as keep the kube-scheduler
// from counting them against each other (it counts a node's other nominated pods as bound there); one nominated
// there already keeps its nomination, and the one that loses its place has our nomination cleared.
func TestNominationsKeepZoneSpreadPodsApart(t *testing.T) {
	spread := func(name, nominated string) *corev1.Pod {
		p := test.Pod(name).Label("app", "web").
			Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "web"}).Obj()
		p.UID = types.UID("uid-" + name)
		p.Status.NominatedNodeName = nominated
		return p
	}
	a, b, c, d := spread("a", ""), spread("b", "node-1"), spread("c", ""), spread("d", "node-1")
	plain := pendingPod("plain", "")
	in := solver.Input{
		Pods:  []*corev1.Pod{a, b, c, plain, d},
		Nodes: []solver.ExistingNode{{Node: test.Node("node-1", "aws:///z/i-1").Obj()}, {Node: test.Node("node-2", "aws:///z/i-2").Obj()}},
	}
	plan := solver.Plan{Existing: map[string]string{
		solver.PodKey(a): "node-1", solver.PodKey(b): "node-1", solver.PodKey(plain): "node-1", solver.PodKey(d): "node-1",
		solver.PodKey(c): "node-2",
	}}
	ours := map[types.UID]string{b.UID: "node-1", d.UID: "node-1"}
	got := map[string]string{}
	for _, ch := range nominations(in, plan, ours, 0) {
		got[ch.pod.Name] = ch.node
	}
	// b keeps node-1 (no write); a is not nominated; d loses ours; c gets node-2; plain gets node-1.
	want := map[string]string{"d": "", "c": "node-2", "plain": "node-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nomination changes (-want +got):\n%s", diff)
	}
}

// The kube-scheduler put the small pod planned for claim-small on node-big (planned for the large pod): the
// large pod is planned anew, and claim-small, empty with nothing planned on it, is surplus. claim-big keeps
// the small pod it got.
func TestSurplusAfterPodsLandedElsewhere(t *testing.T) {
	small := test.Pod("small").Running("node-big").Obj()
	ds := test.Pod("ds").OwnedBy("apps/v1", "DaemonSet", "agent").Running("node-small").Obj()
	large := pendingPod("large", "")
	pool := test.NodePool("default").Obj()
	never := test.NodePool("keep").ConsolidateAfter("Never").Obj()
	in := solver.Input{
		Pods:      []*corev1.Pod{large},
		NodePools: []solver.NodePoolOption{{NodePool: pool}, {NodePool: never}},
		Nodes: []solver.ExistingNode{
			{Node: test.Node("node-big", "aws:///z/i-big").Obj(), Pods: []*corev1.Pod{small}},
			{Node: test.Node("node-small", "aws:///z/i-small").Obj(), Pods: []*corev1.Pod{ds}},
		},
		InFlight: []solver.InFlightClaim{
			{NodeClaim: test.NodeClaim("claim-big", "default").NodeName("node-big").Obj()},
			{NodeClaim: test.NodeClaim("claim-small", "default").NodeName("node-small").Obj()},
			{NodeClaim: test.NodeClaim("claim-launching", "default").Obj()},
			{NodeClaim: test.NodeClaim("claim-planned", "default").Obj()},
			{NodeClaim: test.NodeClaim("claim-pinned", "default").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Obj()},
			{NodeClaim: test.NodeClaim("claim-never", "keep").Obj()},
			// Launched by the provisioner for a pod that went elsewhere: surplus even in a pool that never consolidates.
			{NodeClaim: test.NodeClaim("claim-never-launched", "keep").Annotation(deps.PlannedPodsAnnotationKey, "uid-elsewhere").Obj()},
			{NodeClaim: test.NodeClaim("claim-emptied", "default").LastPodEventTime(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)).Obj()},
		},
	}
	plan := solver.Plan{Existing: map[string]string{solver.PodKey(large): "claim-planned"}}
	var got []string
	for _, nc := range surplus(in, plan) {
		got = append(got, nc.Name)
	}
	if d := cmp.Diff([]string{"claim-launching", "claim-never-launched", "claim-small"}, got); d != "" {
		t.Errorf("surplus NodeClaims (-want +got):\n%s", d)
	}
}
