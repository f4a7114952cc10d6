package adapter

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestSchedulerAdapter(t *testing.T) {
	in := solver.Input{
		Pods: []*corev1.Pod{
			test.Pod("a").Requests("500m", "512Mi").Obj(),
			test.Pod("b").Requests("500m", "512Mi").Obj(),
			test.Pod("nowhere").Requests("100m", "").NodeSelector("team", "absent").Obj(),
		},
		NodePools: []solver.NodePoolOption{{NodePool: test.NodePool("default").Obj(), InstanceTypes: fake.DefaultInstanceTypes()}},
	}
	plan := Scheduler{}.Solve(context.Background(), in)
	if len(plan.NewNodeClaims) != 1 {
		t.Fatalf("new nodeclaims = %d, want 1 (plan %+v)", len(plan.NewNodeClaims), plan)
	}
	nn := plan.NewNodeClaims[0]
	var pods []string
	for _, p := range nn.Pods {
		pods = append(pods, p.Name)
	}
	if diff := cmp.Diff([]string{"a", "b"}, pods); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if nn.NodePool.Name != "default" || len(nn.InstanceTypes) == 0 {
		t.Errorf("nodeclaim pool %q with %d instance types", nn.NodePool.Name, len(nn.InstanceTypes))
	}
	if len(karpv1.RequirementsFor(nn.Requirements, corev1.LabelInstanceTypeStable)) == 0 {
		t.Errorf("no instance-type requirement in %v", nn.Requirements)
	}
	if _, ok := plan.Unschedulable["default/nowhere"]; !ok {
		t.Errorf("pod nowhere not reported unschedulable: %v", plan.Unschedulable)
	}
}

// TestExistingNodes checks how Nodes reach the scheduler: a Dovetail node still initializing takes pods despite
// its startup and ephemeral taints and a status without allocatable; an initialized one keeps its taints; pods
// bound to a node count for anti-affinity; a NodeClaim whose Node registered is seen once, as the Node.
func TestExistingNodes(t *testing.T) {
	const providerID = "fake:///zone-a/i-1"
	startup := corev1.Taint{Key: "cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute}
	claim := func(initialized bool) *karpv1.NodeClaim {
		nc := test.NodeClaim("default-abcde", "default").StartupTaint(startup.Key, startup.Value, startup.Effect).
			ProviderID(providerID).Obj()
		nc.Status.NodeName = "node-1"
		nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		if initialized {
			nc.SetTrue(karpv1.ConditionTypeInitialized, karpv1.ReasonInitialized)
		}
		return nc
	}
	initializing := test.Node("node-1", providerID).Taint(startup).Taint(karpv1.UnregisteredNoExecuteTaint()).
		Taint(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}).Obj()
	initializing.Status.Allocatable = nil
	dedicated := test.Node("node-1", providerID).Taint(corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}).Obj()
	web := test.Pod("web").Requests("500m", "512Mi").Obj()
	web.Labels = map[string]string{"app": "web"}
	apart := test.Pod("apart").Requests("500m", "512Mi").Obj()
	apart.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
	}}
	// A registered node whose device plugin has not reported example.com/device yet; its NodeClaim expects one.
	deviceClaim := claim(false)
	deviceClaim.Status.Allocatable["example.com/device"] = resource.MustParse("1")
	noDeviceYet := test.Node("node-1", providerID).Obj()
	devicePod := test.Pod("p").Requests("1", "1Gi").Obj()
	devicePod.Spec.Containers[0].Resources.Requests["example.com/device"] = resource.MustParse("1")
	boundWeb := web.DeepCopy()
	boundWeb.Name, boundWeb.Spec.NodeName = "web-bound", "node-1"

	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		node     solver.ExistingNode
		wantNode string // "" = a new NodeClaim
	}{
		{"initializing node takes the pod", test.Pod("p").Requests("1", "1Gi").Obj(),
			solver.ExistingNode{Node: initializing, NodeClaim: claim(false)}, "node-1"},
		{"initializing node takes the NodeClaim's extended resources", devicePod,
			solver.ExistingNode{Node: noDeviceYet, NodeClaim: deviceClaim}, "node-1"},
		{"initialized node keeps its startup taint", test.Pod("p").Requests("1", "1Gi").Obj(),
			solver.ExistingNode{Node: test.Node("node-1", providerID).Taint(startup).Obj(), NodeClaim: claim(true)}, ""},
		{"other taints stay while initializing", test.Pod("p").Requests("1", "1Gi").Obj(),
			solver.ExistingNode{Node: dedicated, NodeClaim: claim(false)}, ""},
		{"node not launched by dovetail", test.Pod("p").Requests("1", "1Gi").Obj(),
			solver.ExistingNode{Node: test.Node("node-1", "").Obj()}, "node-1"},
		{"bound pods count for anti-affinity", apart,
			solver.ExistingNode{Node: test.Node("node-1", "").Obj(), Pods: []*corev1.Pod{boundWeb}}, ""},
		{"deleting nodeclaim takes no pods", test.Pod("p").Requests("1", "1Gi").Obj(),
			solver.ExistingNode{Node: test.Node("node-1", providerID).Obj(), NodeClaim: deleting(claim(true))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := solver.Input{
				Pods:      []*corev1.Pod{tc.pod},
				NodePools: []solver.NodePoolOption{{NodePool: test.NodePool("default").Obj(), InstanceTypes: fake.DefaultInstanceTypes()}},
				Nodes:     []solver.ExistingNode{tc.node},
			}
			if tc.node.NodeClaim != nil {
				// The provisioner also lists the NodeClaim as in flight: it must not count twice.
				in.InFlight = []solver.InFlightClaim{{NodeClaim: tc.node.NodeClaim, Available: tc.node.NodeClaim.Status.Allocatable}}
			}
			plan := Scheduler{}.Solve(context.Background(), in)
			key := solver.PodKey(tc.pod)
			if got := plan.Existing[key]; got != tc.wantNode {
				t.Errorf("pod placed on %q, want %q (unschedulable %v)", got, tc.wantNode, plan.Unschedulable)
			}
			if wantNew := tc.wantNode == ""; wantNew != (len(plan.NewNodeClaims) == 1) {
				t.Errorf("%d new nodeclaims, want a new one: %v (unschedulable %v)", len(plan.NewNodeClaims), wantNew, plan.Unschedulable)
			}
		})
	}
}

func deleting(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	now := metav1.Now()
	nc.DeletionTimestamp = &now
	return nc
}

// TestUnregisteredNodeSeenAsItsNodeClaim: a Node that exists but whose NodeClaim has not registered it yet is
// the same machine as the NodeClaim: the scheduler sees it once, as the NodeClaim, so pods are planned on the
// NodeClaim (nominated once it registers) and its room is not offered twice.
func TestUnregisteredNodeSeenAsItsNodeClaim(t *testing.T) {
	const providerID = "fake:///zone-a/i-1"
	nc := test.NodeClaim("default-abcde", "default").ProviderID(providerID).Obj()
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := test.Node("node-1", providerID).Label(karpv1.NodePoolLabelKey, "default").Taint(karpv1.UnregisteredNoExecuteTaint()).Obj()
	node.Status.Allocatable = nc.Status.Allocatable.DeepCopy()
	in := solver.Input{
		Pods:      []*corev1.Pod{test.Pod("a").Requests("1500m", "1Gi").Obj(), test.Pod("b").Requests("1500m", "1Gi").Obj()},
		NodePools: []solver.NodePoolOption{{NodePool: test.NodePool("default").Obj(), InstanceTypes: fake.DefaultInstanceTypes()}},
		Nodes:     []solver.ExistingNode{{Node: node, NodeClaim: nc}},
		InFlight: []solver.InFlightClaim{{NodeClaim: nc, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"},
			Available: nc.Status.Allocatable}},
	}
	plan := Scheduler{}.Solve(context.Background(), in)
	var onClaim []string
	for pod, name := range plan.Existing {
		if name != "default-abcde" {
			t.Errorf("pod %s planned on %s, want the NodeClaim default-abcde", pod, name)
		}
		onClaim = append(onClaim, pod)
	}
	if len(onClaim) != 1 || len(plan.NewNodeClaims) != 1 {
		t.Errorf("%d pods on the NodeClaim and %d new nodeclaims, want 1 and 1 (the machine holds one pod)", len(onClaim), len(plan.NewNodeClaims))
	}

	// Registered, the Node stands for it.
	nc.Status.NodeName = "node-1"
	plan = Scheduler{}.Solve(context.Background(), in)
	for pod, name := range plan.Existing {
		if name != "node-1" {
			t.Errorf("registered: pod %s planned on %s, want node-1", pod, name)
		}
	}
}

// TestPinnedPods: a pinned pod is placed where it is pinned without being planned, and its requests count there;
// a pin to a node the snapshot lacks is ignored.
func TestPinnedPods(t *testing.T) {
	claim := func(name string) solver.InFlightClaim {
		return solver.InFlightClaim{NodeClaim: test.NodeClaim(name, "default").Obj(), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"},
			Available: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("110")}}
	}
	in := solver.Input{
		Pods: []*corev1.Pod{test.Pod("a").Requests("1500m", "1Gi").Obj(), test.Pod("b").Requests("1500m", "1Gi").Obj(),
			test.Pod("c").Requests("100m", "1Gi").Obj()},
		NodePools: []solver.NodePoolOption{{NodePool: test.NodePool("default").Obj(), InstanceTypes: fake.DefaultInstanceTypes()}},
		InFlight:  []solver.InFlightClaim{claim("claim-1"), claim("claim-2")},
		// Unpinned, the scheduler would put a on claim-1 and b on claim-2.
		Pinned: map[string]string{"default/a": "claim-2", "default/b": "claim-1", "default/c": "gone"},
	}
	plan := Scheduler{}.Solve(context.Background(), in)
	want := map[string]string{"default/a": "claim-2", "default/b": "claim-1"}
	got := map[string]string{"default/a": plan.Existing["default/a"], "default/b": plan.Existing["default/b"]}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pinned pods (-want +got):\n%s", d)
	}
	if name, ok := plan.Existing["default/c"]; !ok || name == "gone" {
		t.Errorf("pod c pinned to a missing node: planned on %q (%v)", name, ok)
	}
}
