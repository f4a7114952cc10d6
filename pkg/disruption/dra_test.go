package disruption_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// draCatalog: cpu.small has no devices and is the cheapest; gpu1.l4 has one GPU of product L4, gpu4.l4 four;
// gpu1.t4 one GPU of product T4, cheaper than gpu1.l4.
func draCatalog() []*cloudprovider.InstanceType {
	sizes := []struct {
		name, cpu, mem string
		price          float64
	}{{"cpu.small", "2", "8Gi", 0.1}, {"gpu1.t4", "4", "16Gi", 0.5}, {"gpu1.l4", "4", "16Gi", 0.8}, {"gpu4.l4", "48", "192Gi", 4.6}}
	var out []*cloudprovider.InstanceType
	for _, s := range sizes {
		out = append(out, test.SchedInstanceType(s.name, s.cpu, s.mem).Offering("a", karpv1.CapacityTypeOnDemand, s.price).Obj())
	}
	return out
}

func draDeviceModels(t *testing.T) *devices.Models {
	t.Helper()
	o, err := devices.ParseOverrides([]byte(`
models:
- instanceTypes: [gpu1.l4]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 1, attributes: {type: {string: gpu}, productName: {string: L4}}}]
- instanceTypes: [gpu4.l4]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 4, attributes: {type: {string: gpu}, productName: {string: L4}}}]
- instanceTypes: [gpu1.t4]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 1, attributes: {type: {string: gpu}, productName: {string: T4}}}]
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

// draNode is an existing node of the DRA catalog: its StateNode, candidate and published slices.
type draNode struct {
	name, instanceType string
	price              float64
	pods               []*corev1.Pod
	candidate          bool
}

// draWorld builds a decision snapshot of nodes with the device models' slices published on each, claims for
// the pods' generated claims allocated on their nodes (the GPUs from gpu-0 on) and others as given.
func draWorld(t *testing.T, nodes []draNode, others ...*resourcev1.ResourceClaim) *disruption.Snapshot {
	t.Helper()
	models := draDeviceModels(t)
	types := draCatalog()
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	pool := test.NodePool("default").Obj()
	d := &scheduling.DRA{Models: models, Claims: others,
		DeviceClasses:  []*resourcev1.DeviceClass{test.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`)},
		ClaimTemplates: []*resourcev1.ResourceClaimTemplate{test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "L4"`).Template("default", "l4")}}
	cluster := &scheduling.Snapshot{
		NodePools:     []*scheduling.NodePool{test.SchedNodePool(pool.Name).Obj()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{pool.Name: types},
		DRA:           d,
	}
	snap := &disruption.Snapshot{Now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Cluster: cluster,
		NodePools: map[string]*karpv1.NodePool{pool.Name: pool}, NodeCounts: map[string]int{pool.Name: len(nodes)}}
	for _, n := range nodes {
		c := test.Candidate(n.name, n.instanceType, n.price).Pods(n.pods...).Obj()
		used := 0
		for _, p := range c.Pods {
			for _, st := range p.Status.ResourceClaimStatuses {
				d.Claims = append(d.Claims, test.AllocatedClaim(p.Namespace, *st.ResourceClaimName, n.name, "gpu.nvidia.com", "gpu-"+string(rune('0'+used))))
				used++
			}
		}
		for _, s := range models.Slices(n.instanceType, n.name) {
			d.Slices = append(d.Slices, &s)
		}
		it := byName[n.instanceType]
		sn := test.SchedNode(n.name, it.Capacity.Cpu().String(), it.Capacity.Memory().String()).Zone("a").
			Label(corev1.LabelInstanceTypeStable, n.instanceType).Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand).
			Label(karpv1.NodePoolLabelKey, pool.Name).Pods(c.Pods...).Obj()
		sn.NodePool = pool.Name
		cluster.Nodes = append(cluster.Nodes, sn)
		if n.candidate {
			snap.Candidates = append(snap.Candidates, c)
		}
	}
	return snap
}

// l4Pod is a pod of 500m whose claim, generated from template l4 as claim, asks for one L4 GPU.
func l4Pod(name, claim string) *corev1.Pod {
	return test.SchedPod(name).Labels("app", name).Requests("500m", "1Gi").ClaimTemplate("gpu", "l4").Generated("gpu", claim).Obj()
}

// TestDecideMovesClaimPodsOnlyToTheirDevices: consolidation moves a pod whose claim holds a GPU only to a node
// that has a free GPU of its product, existing or new, never to a cheaper node without one.
func TestDecideMovesClaimPodsOnlyToTheirDevices(t *testing.T) {
	cases := []struct {
		name  string
		nodes []draNode
		want  string
	}{
		{name: "a large GPU node is replaced by the cheapest type with the pod's GPU, not by a CPU-only or T4 type",
			nodes: []draNode{{name: "big", instanceType: "gpu4.l4", price: 4.6, pods: []*corev1.Pod{l4Pod("web", "web-gpu-1")}, candidate: true}},
			want:  "underutilized/replace (single): 1 node(s) big, replaced by gpu1.l4, saving $3.8000/h"},
		{name: "the pod moves to an existing node with a free L4; the CPU node with room does not take it",
			nodes: []draNode{
				{name: "big", instanceType: "gpu4.l4", price: 4.6, pods: []*corev1.Pod{l4Pod("web", "web-gpu-1")}, candidate: true},
				{name: "other", instanceType: "gpu4.l4", price: 4.6, pods: []*corev1.Pod{l4Pod("a", "a-gpu-1"), l4Pod("b", "b-gpu-1"), l4Pod("c", "c-gpu-1")}},
				{name: "cpu", instanceType: "cpu.small", price: 0.1}},
			want: "underutilized/delete (single): 1 node(s) big, saving $4.6000/h"},
		{name: "an existing L4 node whose GPUs are all taken does not take the pod",
			nodes: []draNode{
				{name: "big", instanceType: "gpu1.l4", price: 0.8, pods: []*corev1.Pod{l4Pod("web", "web-gpu-1")}, candidate: true},
				{name: "full", instanceType: "gpu1.l4", price: 0.8, pods: []*corev1.Pod{l4Pod("a", "a-gpu-1")}},
				{name: "cpu", instanceType: "cpu.small", price: 0.1}},
			want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := draWorld(t, tc.nodes)
			r, err := disruption.Decide(context.Background(), snap, disruption.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if r.Command != nil {
				got = r.Command.Message()
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("command (-want +got):\n%s\nstays: %+v", d, r.Stays)
			}
			if r.Command == nil {
				return
			}
			for _, rep := range r.Command.Replacements {
				for _, o := range rep.InstanceTypeOptions {
					if !strings.HasSuffix(o.Name, ".l4") {
						t.Errorf("replacement option %s has no L4", o.Name)
					}
				}
			}
			for _, pl := range r.Command.Placements {
				if pl.Node == "cpu" {
					t.Errorf("pod %s placed on the CPU-only node", pl.Pod)
				}
			}
		})
	}
}
