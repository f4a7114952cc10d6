package scheduling_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// draModels: gpu1.a has one GPU of product A, gpu4.a four of them over two PCIe roots with one EFA interface on
// each, gpu1.b one GPU of product B; the standard types have no devices.
func draModels(t testing.TB) *devices.Models {
	t.Helper()
	o, err := devices.ParseOverrides([]byte(`
models:
- instanceTypes: [gpu1.a, gpu4.a]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 1, attributes: {type: {string: gpu}, productName: {string: A}}, capacity: {memory: {value: 40Gi}}}]
- instanceTypes: [gpu4.a]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 4, pcieRoots: 2, attributes: {type: {string: gpu}, productName: {string: A}}, capacity: {memory: {value: 40Gi}}}]
- instanceTypes: [gpu4.a]
  driver: dra.net
  devices: [{name: efa, count: 2, pcieRoots: 2, attributes: {dra.net/rdma: {bool: true}}}]
- instanceTypes: [gpu1.b]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 1, attributes: {type: {string: gpu}, productName: {string: B}}, capacity: {memory: {value: 16Gi}}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := devices.New(nil, devices.Options{Overrides: o})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func draTypes() []*cloudprovider.InstanceType {
	return append(standardTypes(),
		test.SchedInstanceType("gpu1.a", "4", "16Gi").Zones(1.00, "a").Obj(),
		test.SchedInstanceType("gpu4.a", "16", "64Gi").Zones(3.20, "a").Obj(),
		test.SchedInstanceType("gpu1.b", "4", "16Gi").Zones(0.50, "a").Obj(),
	)
}

var draClasses = []*resourcev1.DeviceClass{
	test.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`),
	test.DeviceClass("efa", `device.driver == "dra.net"`),
}

var draTemplates = []*resourcev1.ResourceClaimTemplate{
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "A"`).Template("default", "one-a"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1).Template("default", "one-any"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100Gi")) >= 0`).Template("default", "huge"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 2).Exactly("nic", "efa", 1).SameAttribute(string(devices.PCIeRootAttribute)).Template("default", "two-plus-efa"),
	test.ClaimSpec().AllOf("gpu", "gpu.nvidia.com").Template("default", "all"),
	test.ClaimSpec().FirstAvailable("gpu", "gpu.nvidia.com", `device.attributes["gpu.nvidia.com"].productName == "C"`,
		`device.attributes["gpu.nvidia.com"].productName == "B"`).Template("default", "c-else-b"),
}

type draCase struct {
	name    string
	pods    []*corev1.Pod
	nodes   []*scheduling.StateNode
	claims  []*resourcev1.ResourceClaim
	slices  []*resourcev1.ResourceSlice
	want    map[string]string
	reasons map[string]string
}

func solveDRA(t *testing.T, tc draCase) *scheduling.Plan {
	t.Helper()
	models := draModels(t)
	snap := &scheduling.Snapshot{Pods: tc.pods, Nodes: tc.nodes, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": draTypes()},
		DRA:           &scheduling.DRA{Claims: tc.claims, ClaimTemplates: draTemplates, DeviceClasses: draClasses, Slices: tc.slices, Models: models}}
	plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{Bound: scheduling.BoundNone})
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	for _, nc := range plan.NodeClaims {
		for name := range nc.Requests {
			if strings.Contains(string(name), "dra.dovetail.sh") {
				t.Errorf("NodeClaim %s requests the pseudo-resource %s", nc.Name, name)
			}
		}
	}
	return plan
}

func slicesOf(m *devices.Models, instanceType, node string) []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	for _, s := range m.Slices(instanceType, node) {
		out = append(out, &s)
	}
	return out
}

func TestDRAProvisioning(t *testing.T) {
	claimPods := func(n int, template string) []*corev1.Pod {
		return pods(n, func(i int) *test.SchedPodBuilder {
			return test.SchedPod(fmt.Sprintf("%s-%d", template, i)).Requests("500m", "1Gi").ClaimTemplate("gpu", template)
		})
	}
	cases := []draCase{
		{name: "a product selector skips the cheaper type with the other product", pods: claimPods(1, "one-a"),
			want: map[string]string{"one-a-0": "0/gpu1.a/a/on-demand"}},
		{name: "any GPU takes the cheapest GPU type", pods: claimPods(1, "one-any"),
			want: map[string]string{"one-any-0": "0/gpu1.b/a/on-demand"}},
		{name: "four one-GPU pods share a four-GPU node", pods: claimPods(4, "one-a"),
			want: map[string]string{"one-a-0": "0/gpu4.a/a/on-demand", "one-a-1": "0/gpu4.a/a/on-demand",
				"one-a-2": "0/gpu4.a/a/on-demand", "one-a-3": "0/gpu4.a/a/on-demand"}},
		{name: "two GPUs and an EFA on one PCIe root: two per four-GPU node", pods: claimPods(3, "two-plus-efa"),
			want: map[string]string{"two-plus-efa-0": "0/gpu4.a/a/on-demand", "two-plus-efa-1": "0/gpu4.a/a/on-demand",
				"two-plus-efa-2": "1/gpu4.a/a/on-demand"}},
		{name: "all GPUs: one pod per node", pods: claimPods(2, "all"),
			want: map[string]string{"all-0": "0/gpu1.b/a/on-demand", "all-1": "1/gpu1.b/a/on-demand"}},
		{name: "first available alternative", pods: claimPods(1, "c-else-b"),
			want: map[string]string{"c-else-b-0": "0/gpu1.b/a/on-demand"}},
		{name: "no type has the device", pods: claimPods(1, "huge"),
			want:    map[string]string{"huge-0": "unschedulable"},
			reasons: map[string]string{"huge-0": "devices for resource claims gpu (ResourceClaimTemplate huge)"}},
		{name: "missing template", pods: claimPods(1, "nope"),
			want:    map[string]string{"nope-0": "unschedulable"},
			reasons: map[string]string{"nope-0": "resource claim template nope (pod claim gpu) does not exist"}},
		{name: "existing node: a free GPU takes the pod, the allocated ones do not",
			pods:   claimPods(2, "one-a"),
			nodes:  []*scheduling.StateNode{test.SchedNode("node-1", "16", "64Gi").Zone("a").Obj()},
			slices: slicesOf(draModels(t), "gpu4.a", "node-1"),
			claims: []*resourcev1.ResourceClaim{test.AllocatedClaim("default", "taken", "node-1", "gpu.nvidia.com", "gpu-0", "gpu-1", "gpu-2")},
			want:   map[string]string{"one-a-0": "node/node-1", "one-a-1": "0/gpu1.a/a/on-demand"}},
		{name: "a pod whose claim is allocated goes to that node",
			pods: []*corev1.Pod{test.SchedPod("p").Requests("500m", "1Gi").Claim("gpu", "mine").Obj()},
			nodes: []*scheduling.StateNode{test.SchedNode("node-1", "16", "64Gi").Zone("a").Obj(),
				test.SchedNode("node-2", "16", "64Gi").Zone("a").Obj()},
			slices: slicesOf(draModels(t), "gpu4.a", "node-2"),
			claims: []*resourcev1.ResourceClaim{test.AllocatedClaim("default", "mine", "node-2", "gpu.nvidia.com", "gpu-0")},
			want:   map[string]string{"p": "node/node-2"}},
		{name: "a claim shared by two pending pods: the first plans it, the second waits",
			pods: []*corev1.Pod{test.SchedPod("p1").Requests("500m", "1Gi").Claim("gpu", "shared").Obj(),
				test.SchedPod("p2").Requests("500m", "1Gi").Claim("gpu", "shared").Obj()},
			claims:  []*resourcev1.ResourceClaim{test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1).Claim("default", "shared")},
			want:    map[string]string{"p1": "0/gpu1.b/a/on-demand", "p2": "unschedulable"},
			reasons: map[string]string{"p2": "shared with pod default/p1"}},
	}
	// A pod being moved off node-0 (a disruption simulation): its generated claim, allocated there, is released;
	// the pod goes to the node with a free device of its product, not to the one without devices.
	moving := test.SchedPod("moving").Requests("500m", "1Gi").ClaimTemplate("gpu", "one-a").Obj()
	moving.Spec.NodeName = "node-0"
	generated := "moving-gpu-x1"
	moving.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &generated}}
	cases = append(cases, draCase{name: "a moved pod gets a new claim where devices are free",
		pods: []*corev1.Pod{moving},
		nodes: []*scheduling.StateNode{test.SchedNode("node-1", "16", "64Gi").Zone("a").Obj(),
			test.SchedNode("node-2", "16", "64Gi").Zone("a").Obj()},
		slices: append(slicesOf(draModels(t), "gpu4.a", "node-0"), slicesOf(draModels(t), "gpu4.a", "node-2")...),
		claims: []*resourcev1.ResourceClaim{test.AllocatedClaim("default", generated, "node-0", "gpu.nvidia.com", "gpu-0"),
			test.AllocatedClaim("default", "others", "node-2", "gpu.nvidia.com", "gpu-0", "gpu-1", "gpu-2")},
		want: map[string]string{"moving": "node/node-2"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := solveDRA(t, tc)
			if d := cmp.Diff(tc.want, summarize(plan)); d != "" {
				t.Errorf("placements (-want +got):\n%s", d)
			}
			got := map[string]string{}
			for _, u := range plan.Unschedulable {
				got[u.Pod.Name] = u.Reason
			}
			for pod, sub := range tc.reasons {
				if !strings.Contains(got[pod], sub) {
					t.Errorf("reason for %s = %q, want it to contain %q", pod, got[pod], sub)
				}
			}
		})
	}
}

// TestDRAMixedShapesNeverOvercommit: pods of two claim shapes that draw on the same GPUs are counted apart by the
// solver; the plan still never holds more claim pods on a node than its devices take together.
func TestDRAMixedShapesNeverOvercommit(t *testing.T) {
	var ps []*corev1.Pod
	for i := range 6 {
		tmpl := "one-a"
		if i%2 == 1 {
			tmpl = "one-any"
		}
		ps = append(ps, test.SchedPod(fmt.Sprintf("p%d", i)).Requests("100m", "100Mi").ClaimTemplate("gpu", tmpl).Obj())
	}
	plan := solveDRA(t, draCase{pods: ps})
	gpus := map[string]int{"gpu1.a": 1, "gpu4.a": 4, "gpu1.b": 1}
	planned := 0
	for _, nc := range plan.NodeClaims {
		planned += len(nc.Pods)
		for _, o := range nc.InstanceTypeOptions {
			if len(nc.Pods) > gpus[o.Name] {
				t.Errorf("NodeClaim %s keeps option %s (%d GPUs) for %d claim pods", nc.Name, o.Name, gpus[o.Name], len(nc.Pods))
			}
		}
	}
	if planned+len(plan.Unschedulable) != len(ps) {
		t.Errorf("planned %d + unschedulable %d != %d pods", planned, len(plan.Unschedulable), len(ps))
	}
	if planned < 4 {
		t.Errorf("only %d of 6 pods planned", planned)
	}
}
