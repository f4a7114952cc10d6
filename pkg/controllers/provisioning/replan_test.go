package provisioning

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
	"github.com/dovetail/dovetail/pkg/test"
)

// The issue-16 mix: a small pod (hostname spread) fits a small node alone and a large node only while it is
// empty; a large pod fits only a large node.
func smallPod(name string) *corev1.Pod {
	p := test.Pod(name).Requests("900m", "3Gi").Label("app", "small").Unschedulable().Obj()
	p.UID = types.UID("uid-" + name)
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "small"}}}}
	return p
}

func largePod(name string) *corev1.Pod {
	p := test.Pod(name).Requests("3500m", "28Gi").Label("app", "large").Unschedulable().Obj()
	p.UID = types.UID("uid-" + name)
	return p
}

func room(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods: resource.MustParse("50")}
}

// mixCluster is in-flight NodeClaims of the mix: names starting with "big" are large nodes, "small" small ones.
// registered maps a NodeClaim to the Node it registered (its pods from bound); the others have no Node yet.
type mixCluster struct {
	claims     []string
	registered map[string]string
	bound      map[string][]*corev1.Pod // node name -> pods bound to it
}

func (m mixCluster) input(pending ...*corev1.Pod) solver.Input {
	types := []*cloudprovider.InstanceType{
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "small-type", CPU: "2", Memory: "8Gi", Price: 0.1}),
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "big-type", CPU: "4", Memory: "32Gi", Price: 0.25}),
	}
	in := solver.Input{Pods: pending, NodePools: []solver.NodePoolOption{{NodePool: test.NodePool("default").Obj(), InstanceTypes: types}}}
	for _, name := range m.claims {
		avail, alloc := room("1900m", "7Gi"), room("2", "8Gi")
		if name[:3] == "big" {
			avail, alloc = room("3900m", "30Gi"), room("4", "32Gi")
		}
		nc := test.NodeClaim(name, "default").ProviderID("fake:///z/" + name).Obj()
		labels := map[string]string{karpv1.NodePoolLabelKey: "default"}
		if node := m.registered[name]; node != "" {
			nc.Status.NodeName = node
			n := test.Node(node, "fake:///z/"+name).Label(karpv1.NodePoolLabelKey, "default").Obj()
			n.Status.Allocatable = alloc
			for _, p := range m.bound[node] {
				avail = solver.Subtract(avail, solver.PodRequests(p))
			}
			in.Nodes = append(in.Nodes, solver.ExistingNode{Node: n, Pods: m.bound[node], NodeClaim: nc})
		}
		in.InFlight = append(in.InFlight, solver.InFlightClaim{NodeClaim: nc, Labels: labels, Available: avail})
	}
	return in
}

func bound(p *corev1.Pod, node string) *corev1.Pod {
	b := p.DeepCopy()
	b.Spec.NodeName = node
	b.Status.Conditions = nil
	return b
}

// previous is the placement a pass left: pod -> NodeClaim, for pods pending then (some bound since).
func previous(in solver.Input, planned map[*corev1.Pod]string) placement {
	byTarget := map[string][]deps.PodRef{}
	for p, claim := range planned {
		byTarget[claim] = append(byTarget[claim], deps.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID})
	}
	prevIn := in
	prevIn.Nodes = nil // the previous pass ran before anything registered
	return recordPlacement(prevIn, byTarget, nil)
}

// TestReplanFromActualPlacement runs a pass of the provisioner's planning (pins, then the scheduler) after the
// kube-scheduler bound some pods: pods whose plan still holds stay on their NodeClaims, a displaced pod takes the
// room its displacer was planned on when it fits there, and a launch happens only for a pod no in-flight room
// fits. The NodeClaims are named so that the large ones come first, as the random suffixes of real ones may: the
// hostname-spread small pods, placed first, then meet the large NodeClaims first.
func TestReplanFromActualPlacement(t *testing.T) {
	s1, s2, l1, l2 := smallPod("s1"), smallPod("s2"), largePod("l1"), largePod("l2")
	claims := []string{"big-1", "big-2", "small-1", "small-2"}
	plan1 := map[*corev1.Pod]string{s1: "small-1", s2: "small-2", l1: "big-1", l2: "big-2"}
	cases := []struct {
		name    string
		cluster mixCluster
		pending []*corev1.Pod
		prev    map[*corev1.Pod]string // plan1 when nil
		want    map[string]string      // pod -> NodeClaim or Node
		wantNew int
	}{{
		name:    "nothing bound yet: every pod stays where it was planned",
		cluster: mixCluster{claims: claims},
		pending: []*corev1.Pod{s1, s2, l1, l2},
		want:    map[string]string{"default/s1": "small-1", "default/s2": "small-2", "default/l1": "big-1", "default/l2": "big-2"},
	}, {
		name:    "nodes registered: the pods stay, now on the Nodes",
		cluster: mixCluster{claims: claims, registered: map[string]string{"big-1": "node-b1", "small-1": "node-s1"}},
		pending: []*corev1.Pod{s1, s2, l1, l2},
		want:    map[string]string{"default/s1": "node-s1", "default/s2": "small-2", "default/l1": "node-b1", "default/l2": "big-2"},
	}, {
		name: "small pods swapped small nodes: the displaced one takes the other's planned node, no launch",
		cluster: mixCluster{claims: claims, registered: map[string]string{"small-1": "node-s1", "small-2": "node-s2"},
			bound: map[string][]*corev1.Pod{"node-s2": {bound(s1, "node-s2")}}},
		pending: []*corev1.Pod{s2, l1, l2},
		want:    map[string]string{"default/s2": "node-s1", "default/l1": "big-1", "default/l2": "big-2"},
	}, {
		name: "a large pod on the other's large node: the displaced one takes its room, no launch",
		cluster: mixCluster{claims: claims, registered: map[string]string{"big-1": "node-b1", "big-2": "node-b2"},
			bound: map[string][]*corev1.Pod{"node-b2": {bound(l1, "node-b2")}}},
		pending: []*corev1.Pod{s1, s2, l2},
		want:    map[string]string{"default/s1": "small-1", "default/s2": "small-2", "default/l2": "node-b1"},
	}, {
		name: "a small pod on a large node: its large pod is launched for, the other pods stay",
		cluster: mixCluster{claims: claims, registered: map[string]string{"big-1": "node-b1"},
			bound: map[string][]*corev1.Pod{"node-b1": {bound(s1, "node-b1")}}},
		pending: []*corev1.Pod{s2, l1, l2},
		want:    map[string]string{"default/s2": "small-2", "default/l2": "big-2"},
		wantNew: 1,
	}, {
		name: "a DaemonSet pod on a node changes nothing",
		cluster: mixCluster{claims: claims, registered: map[string]string{"big-1": "node-b1"},
			bound: map[string][]*corev1.Pod{"node-b1": {test.Pod("agent").Requests("100m", "100Mi").OwnedBy("apps/v1", "DaemonSet", "agent").Running("node-b1").Obj()}}},
		pending: []*corev1.Pod{s1, s2, l1, l2},
		want:    map[string]string{"default/s1": "small-1", "default/s2": "small-2", "default/l1": "node-b1", "default/l2": "big-2"},
	}, {
		name:    "a new small pod does not join a pinned one on its NodeClaim (the hostname spread counts it there)",
		cluster: mixCluster{claims: []string{"small-1"}},
		pending: []*corev1.Pod{s1, smallPod("s3")},
		prev:    map[*corev1.Pod]string{s1: "small-1"},
		want:    map[string]string{"default/s1": "small-1"},
		wantNew: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.cluster.input(tc.pending...)
			prev := tc.prev
			if prev == nil {
				prev = plan1
			}
			in.Pinned = pins(in, previous(in, prev))
			plan := adapter.Scheduler{}.Solve(context.Background(), in)
			if d := cmp.Diff(tc.want, plan.Existing); d != "" {
				t.Errorf("pods on in-flight capacity (-want +got):\n%s", d)
			}
			var launched []string
			for _, nn := range plan.NewNodeClaims {
				for _, p := range nn.Pods {
					launched = append(launched, p.Name)
				}
			}
			if len(plan.NewNodeClaims) != tc.wantNew {
				t.Errorf("%d new nodeclaims (for %v), want %d", len(plan.NewNodeClaims), launched, tc.wantNew)
			}
			if len(plan.Unschedulable) > 0 {
				t.Errorf("unschedulable: %v", plan.Unschedulable)
			}
		})
	}
}

func TestPins(t *testing.T) {
	s1, s2, l1 := smallPod("s1"), smallPod("s2"), largePod("l1")
	claims := []string{"big-1", "small-1", "small-2"}
	prevPlan := map[*corev1.Pod]string{s1: "small-1", s2: "small-2", l1: "big-1"}
	tight := mixCluster{claims: claims}.input(s1, s2, l1)
	tight.InFlight[0].Available = room("3", "30Gi") // big-1 can no longer hold l1
	cases := []struct {
		name string
		in   solver.Input
		prev map[*corev1.Pod]string
		want map[string]string
	}{
		{name: "no previous pass", in: mixCluster{claims: claims}.input(s1, s2, l1)},
		{name: "plan holds", in: mixCluster{claims: claims}.input(s1, s2, l1), prev: prevPlan,
			want: map[string]string{"default/s1": "small-1", "default/s2": "small-2", "default/l1": "big-1"}},
		{name: "registered since: pinned to the Node", in: mixCluster{claims: claims, registered: map[string]string{"big-1": "node-b1"}}.input(s1, s2, l1),
			prev: prevPlan, want: map[string]string{"default/s1": "small-1", "default/s2": "small-2", "default/l1": "node-b1"}},
		{name: "a pod planned elsewhere landed on the Node: its pods are planned again",
			in: mixCluster{claims: claims, registered: map[string]string{"big-1": "node-b1"},
				bound: map[string][]*corev1.Pod{"node-b1": {bound(s1, "node-b1")}}}.input(s2, l1),
			prev: prevPlan, want: map[string]string{"default/s2": "small-2"}},
		{name: "a pod planned there landed: the others stay",
			in: mixCluster{claims: claims, registered: map[string]string{"small-1": "node-s1"},
				bound: map[string][]*corev1.Pod{"node-s1": {bound(s1, "node-s1")}}}.input(s2, l1),
			prev: map[*corev1.Pod]string{s1: "small-1", s2: "small-1", l1: "big-1"},
			want: map[string]string{"default/s2": "node-s1", "default/l1": "big-1"}},
		{name: "the NodeClaim is gone", in: mixCluster{claims: []string{"big-1", "small-1"}}.input(s1, s2, l1), prev: prevPlan,
			want: map[string]string{"default/s1": "small-1", "default/l1": "big-1"}},
		{name: "the pinned pods no longer fit", in: tight, prev: prevPlan,
			want: map[string]string{"default/s1": "small-1", "default/s2": "small-2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var prev placement
			if tc.prev != nil {
				prev = previous(tc.in, tc.prev)
			}
			got := pins(tc.in, prev)
			if len(got) == 0 {
				got = nil
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("pins (-want +got):\n%s", d)
			}
		})
	}
}

// TestRecordPlacement: the next pass's pins come from the pods planned on in-flight NodeClaims (by their Node's
// name once registered, and on NodeClaims the pass created) and the pods bound to their Nodes; pods planned on a
// Node no NodeClaim launched are not recorded.
func TestRecordPlacement(t *testing.T) {
	in := mixCluster{claims: []string{"big-1", "small-1"}, registered: map[string]string{"small-1": "node-s1"},
		bound: map[string][]*corev1.Pod{"node-s1": {bound(smallPod("s0"), "node-s1")}}}.input()
	in.Nodes = append(in.Nodes, solver.ExistingNode{Node: test.Node("other", "fake:///z/other").Obj()})
	ref := func(name string) deps.PodRef {
		return deps.PodRef{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}
	}
	got := recordPlacement(in, map[string][]deps.PodRef{
		"big-1": {ref("l1")}, "node-s1": {ref("s1")}, "new-1": {ref("s2")}, "other": {ref("s3")},
	}, []string{"new-1"})
	want := placement{
		planned: map[types.UID]string{"uid-l1": "big-1", "uid-s1": "small-1", "uid-s2": "new-1"},
		expected: map[string]map[types.UID]bool{
			"big-1": {"uid-l1": true}, "small-1": {"uid-s0": true, "uid-s1": true}, "new-1": {"uid-s2": true},
		},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(placement{})); d != "" {
		t.Errorf("placement (-want +got):\n%s", d)
	}
}

// TestRestoredPins: a restarted provisioner takes its first placement from the planned-pods annotations of the
// in-flight NodeClaims, and pins hold it as they hold a placement of the process's own.
func TestRestoredPins(t *testing.T) {
	s1, s2, l1 := smallPod("s1"), smallPod("s2"), largePod("l1")
	annotated := func(in solver.Input, plan map[string][]*corev1.Pod) solver.Input {
		for i := range in.InFlight {
			nc := in.InFlight[i].NodeClaim.DeepCopy()
			annotatePlanned(nc, plan[nc.Name])
			in.InFlight[i].NodeClaim = nc
		}
		return in
	}
	plan := map[string][]*corev1.Pod{"small-1": {s1}, "small-2": {s2}, "big-1": {l1}}
	cases := []struct {
		name string
		in   solver.Input
		want map[string]string
	}{{
		name: "nothing bound: every pod where its NodeClaim's creator planned it",
		in:   annotated(mixCluster{claims: []string{"big-1", "small-1", "small-2"}}.input(s1, s2, l1), plan),
		want: map[string]string{"default/s1": "small-1", "default/s2": "small-2", "default/l1": "big-1"},
	}, {
		name: "a pod planned elsewhere took a Node's room: that NodeClaim's pods no longer fit and are planned again",
		in: annotated(mixCluster{claims: []string{"big-1", "small-1", "small-2"}, registered: map[string]string{"big-1": "node-b1"},
			bound: map[string][]*corev1.Pod{"node-b1": {bound(s1, "node-b1")}}}.input(s2, l1), plan),
		want: map[string]string{"default/s2": "small-2"},
	}, {
		// A later pass of the process before planned s3 on small-1 (not in the annotation) and it bound there.
		name: "a pod bound since, not in the annotation: the others stay while they fit",
		in: annotated(mixCluster{claims: []string{"big-1", "small-1", "small-2"}, registered: map[string]string{"small-1": "node-s1"},
			bound: map[string][]*corev1.Pod{"node-s1": {bound(smallPod("s3"), "node-s1")}}}.input(s1, s2, l1), plan),
		want: map[string]string{"default/s1": "node-s1", "default/s2": "small-2", "default/l1": "big-1"},
	}, {
		name: "NodeClaims without the annotation pin nothing",
		in:   mixCluster{claims: []string{"big-1", "small-1", "small-2"}}.input(s1, s2, l1),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pins(tc.in, restorePlacement(tc.in))
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pins (-want +got):\n%s", diff)
			}
		})
	}
}
