package oracle_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
	"github.com/dovetail/dovetail/test/oracle"
)

// draModelsYAML: gpu1.a one GPU of product A; gpu4.a four over two PCIe roots, each with an EFA interface;
// gpu2.b two GPUs of product B (16Gi); gpu8.b eight of them over four roots, with one EFA interface; cpu.large
// no devices.
const draModelsYAML = `
models:
- instanceTypes: [gpu1.a]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 1, attributes: {type: {string: gpu}, productName: {string: A}}, capacity: {memory: {value: 40Gi}}}]
- instanceTypes: [gpu4.a]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 4, pcieRoots: 2, attributes: {type: {string: gpu}, productName: {string: A}}, capacity: {memory: {value: 40Gi}}}]
- instanceTypes: [gpu4.a]
  driver: dra.net
  devices: [{name: efa, count: 2, pcieRoots: 2, attributes: {dra.net/rdma: {bool: true}}}]
- instanceTypes: [gpu2.b]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 2, attributes: {type: {string: gpu}, productName: {string: B}}, capacity: {memory: {value: 16Gi}}}]
- instanceTypes: [gpu8.b]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 8, pcieRoots: 4, attributes: {type: {string: gpu}, productName: {string: B}}, capacity: {memory: {value: 16Gi}}}]
- instanceTypes: [gpu8.b]
  driver: dra.net
  devices: [{name: efa, count: 1, attributes: {dra.net/rdma: {bool: true}}}]
`

// draTemplates are the claim shapes the random workloads draw from; "huge" fits no type.
var draTemplates = []*resourcev1.ResourceClaimTemplate{
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "A"`).Template("default", "one-a"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1).Template("default", "one-any"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 2).Template("default", "two-any"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 2).Exactly("nic", "efa", 1).SameAttribute("resource.kubernetes.io/pcieRoot").Template("default", "two-plus-efa"),
	test.ClaimSpec().AllOf("gpu", "gpu.nvidia.com").Template("default", "all"),
	test.ClaimSpec().FirstAvailable("gpu", "gpu.nvidia.com", `device.attributes["gpu.nvidia.com"].productName == "C"`,
		`device.attributes["gpu.nvidia.com"].productName == "B"`).Template("default", "c-else-b"),
	test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100Gi")) >= 0`).Template("default", "huge"),
}

// randomDRASnapshot is a seeded workload of 1 to 12 pods, most with a claim from a random template, and sometimes
// an existing gpu4.a node with some of its GPUs allocated.
func randomDRASnapshot(t *testing.T, r *rand.Rand) *scheduling.Snapshot {
	t.Helper()
	o, err := devices.ParseOverrides([]byte(draModelsYAML))
	if err != nil {
		t.Fatal(err)
	}
	models, err := devices.New(nil, devices.Options{Overrides: o})
	if err != nil {
		t.Fatal(err)
	}
	types := []*cloudprovider.InstanceType{
		test.SchedInstanceType("cpu.large", "8", "32Gi").Zones(0.30, "a").Obj(),
		test.SchedInstanceType("gpu1.a", "4", "16Gi").Zones(1.00, "a").Obj(),
		test.SchedInstanceType("gpu4.a", "16", "64Gi").Zones(3.20, "a").Obj(),
		test.SchedInstanceType("gpu2.b", "8", "32Gi").Zones(0.90, "a").Obj(),
		test.SchedInstanceType("gpu8.b", "32", "128Gi").Zones(3.00, "a").Obj(),
	}
	d := &scheduling.DRA{ClaimTemplates: draTemplates, Models: models, DeviceClasses: []*resourcev1.DeviceClass{
		test.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`), test.DeviceClass("efa", `device.driver == "dra.net"`)}}
	snap := &scheduling.Snapshot{NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": types}, DRA: d}
	if r.Intn(2) == 0 {
		n := test.SchedNode("node-1", "16", "64Gi").Zone("a").Obj()
		n.Labels[corev1.LabelInstanceTypeStable] = "gpu4.a"
		snap.Nodes = append(snap.Nodes, n)
		for _, s := range models.Slices("gpu4.a", "node-1") {
			d.Slices = append(d.Slices, &s)
		}
		var taken []string
		for i := range 4 {
			if r.Intn(2) == 0 {
				taken = append(taken, fmt.Sprintf("gpu-%d", i))
			}
		}
		if len(taken) > 0 {
			d.Claims = append(d.Claims, test.AllocatedClaim("default", "taken", "node-1", "gpu.nvidia.com", taken...))
		}
	}
	for i := range 1 + r.Intn(12) {
		b := test.SchedPod(fmt.Sprintf("p%d", i)).Requests(fmt.Sprintf("%dm", 100+100*r.Intn(10)), "512Mi")
		if r.Intn(5) > 0 {
			b = b.ClaimTemplate("gpu", draTemplates[r.Intn(len(draTemplates))].Name)
		}
		snap.Pods = append(snap.Pods, b.Obj())
	}
	return snap
}

// TestRandomClaimWorkloads solves seeded random claim workloads and checks every plan with the kube-scheduler's
// DynamicResources plugin (oracle.CheckDRA): each claim pod passes PreFilter, Filter and Reserve on its planned
// node with the devices of the pods before it taken, and each pod left unplaced for its devices is refused on every
// instance type. Zero violations allowed.
func TestRandomClaimWorkloads(t *testing.T) {
	n := cases(t) / 20
	ctx := context.Background()
	var placed, unplaced, failed int
	for seed := 0; seed < n; seed++ {
		snap := randomDRASnapshot(t, rand.New(rand.NewSource(int64(seed))))
		plan, err := scheduling.Solve(ctx, snap, scheduling.Options{Bound: scheduling.BoundNone})
		if err != nil {
			t.Fatalf("seed %d: solve: %v", seed, err)
		}
		v, err := oracle.CheckDRA(ctx, snap, plan)
		if err != nil {
			t.Fatalf("seed %d: check: %v", seed, err)
		}
		if len(v) > 0 {
			failed++
			if failed <= 10 {
				t.Errorf("seed %d: %d violations, first: %s", seed, len(v), v[0])
			}
		}
		placed += len(snap.Pods) - len(plan.Unschedulable)
		unplaced += len(plan.Unschedulable)
	}
	t.Logf("%d cases, %d pods placed and checked, %d unplaced, %d failing cases", n, placed, unplaced, failed)
	if placed == 0 || unplaced == 0 {
		t.Errorf("the workloads exercise too little: %d placed, %d unplaced", placed, unplaced)
	}
}

// TestCheckDRAFindsWrongPlans: the DRA check refuses a claim pod planned on a type without its device, two pods on
// a node with one device, and a pod left unplaced although a type has its device.
func TestCheckDRAFindsWrongPlans(t *testing.T) {
	ctx := context.Background()
	snap := randomDRASnapshot(t, rand.New(rand.NewSource(1)))
	snap.Nodes, snap.DRA.Slices, snap.DRA.Claims = nil, nil, nil
	snap.Pods = []*corev1.Pod{
		test.SchedPod("a").Requests("100m", "512Mi").ClaimTemplate("gpu", "one-a").Obj(),
		test.SchedPod("b").Requests("100m", "512Mi").ClaimTemplate("gpu", "one-a").Obj(),
	}
	key := func(p *corev1.Pod) types.NamespacedName {
		return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	newNode := func(name, it string, pods ...*corev1.Pod) *scheduling.NodeClaimPlan {
		nc := &scheduling.NodeClaimPlan{Name: name, NodePool: "default", InstanceType: it}
		for _, p := range pods {
			nc.Pods = append(nc.Pods, key(p))
		}
		return nc
	}
	a, b := snap.Pods[0], snap.Pods[1]
	cases := []struct {
		name string
		plan *scheduling.Plan
		want []string // the violations' nodes
	}{
		{name: "a correct plan", plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{newNode("n1", "gpu4.a", a, b)}}},
		{name: "a type without the device", plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{newNode("n1", "cpu.large", a), newNode("n2", "gpu1.a", b)}},
			want: []string{"n1"}},
		{name: "two pods, one device", plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{newNode("n1", "gpu1.a", a, b)}},
			want: []string{"n1"}},
		{name: "left unplaced though gpu1.a and gpu4.a have its device", plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{newNode("n1", "gpu1.a", a)},
			Unschedulable: []scheduling.PodError{{Pod: key(b), Reason: "insufficient devices for resource claims gpu (ResourceClaimTemplate one-a)"}}},
			want: []string{"new gpu1.a", "new gpu4.a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := oracle.CheckDRA(ctx, snap, tc.plan)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range v {
				got = append(got, x.Node)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("violations (-want +got):\n%s\n%v", d, v)
			}
		})
	}
}
