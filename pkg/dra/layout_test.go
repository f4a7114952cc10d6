package dra_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail/dovetail/pkg/dra"
	"github.com/dovetail/dovetail/pkg/dra/devices"
)

// separateCounters rewrites slices of the Kubernetes 1.34 layout (counter sets beside the devices) into the 1.35
// layout as a 1.35 driver publishes it: each pool's counter sets gathered in one slice of their own.
func separateCounters(in []resourcev1.ResourceSlice) []*resourcev1.ResourceSlice {
	type pool struct{ driver, name string }
	sets := map[pool][]resourcev1.CounterSet{}
	var order []pool
	for _, s := range in {
		p := pool{s.Spec.Driver, s.Spec.Pool.Name}
		if len(s.Spec.SharedCounters) == 0 {
			continue
		}
		if _, ok := sets[p]; !ok {
			order = append(order, p)
		}
		sets[p] = append(sets[p], s.Spec.SharedCounters...)
	}
	var out []*resourcev1.ResourceSlice
	for i := range in {
		s := in[i].DeepCopy()
		s.Spec.SharedCounters = nil
		if _, ok := sets[pool{s.Spec.Driver, s.Spec.Pool.Name}]; ok {
			s.Spec.Pool.ResourceSliceCount++
		}
		out = append(out, s)
	}
	for _, p := range order {
		c := out[0].DeepCopy()
		for _, s := range out {
			if s.Spec.Driver == p.driver && s.Spec.Pool.Name == p.name {
				c = s.DeepCopy()
				break
			}
		}
		c.Name = p.name + "-" + p.driver + "-counters"
		c.Spec.Devices = nil
		c.Spec.SharedCounters = sets[p]
		out = append(out, c)
	}
	return out
}

func TestFitInEitherCounterLayout(t *testing.T) {
	models := deviceModels(t)
	a := dra.NewAllocator(classes)
	mig := func(p string) string { return `device.attributes["gpu.nvidia.com"].profile == "` + p + `"` }
	cases := []struct {
		name, instanceType string
		claim              *resourcev1.ResourceClaim
		want               int
	}{
		{"whole GPUs", "p4d.24xlarge", claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)}), 8},
		{"smallest MIG slices", "p4d.24xlarge", claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, mig("1g.5gb"))}), 56},
		{"full-GPU MIG slices", "p4d.24xlarge", claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, mig("7g.40gb"))}), 8},
		{"GPUs without counters", "g5.12xlarge", claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)}), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := models.Slices(tc.instanceType, "node-a")
			var beside []*resourcev1.ResourceSlice
			for i := range model {
				beside = append(beside, &model[i])
			}
			for layout, slices := range map[string][]*resourcev1.ResourceSlice{
				"1.34 (counters beside devices)": beside, "1.35 (counters apart)": separateCounters(model),
			} {
				got, err := a.Node("node-a", nil, slices).Fit(context.Background(), []*resourcev1.ResourceClaim{tc.claim}, 100)
				if err != nil {
					t.Fatalf("%s: %v", layout, err)
				}
				if got != tc.want {
					t.Errorf("%s: Fit = %d, want %d", layout, got, tc.want)
				}
			}
			if diff := cmp.Diff(models.Slices(tc.instanceType, "node-a"), model); diff != "" {
				t.Errorf("the node changed the slices it was given (-before +after):\n%s", diff)
			}
		})
	}
}

// A pool whose slices, in the 1.34 layout, reuse one counter-set name cannot be read in the 1.35 layout: the
// allocator says so instead of allocating nothing.
func TestSplitCountersDuplicateSetName(t *testing.T) {
	slice := func(name string) *resourcev1.ResourceSlice {
		node := "node-a"
		s := &resourcev1.ResourceSlice{}
		s.Name = name
		s.Spec = resourcev1.ResourceSliceSpec{Driver: devices.NVIDIADriver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2},
			SharedCounters: []resourcev1.CounterSet{{Name: "gpu", Counters: map[string]resourcev1.Counter{
				"memory": {Value: resource.MustParse("8")}}}},
			Devices: []resourcev1.Device{{Name: name + "-gpu", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type": {StringValue: ptrTo("gpu")}},
				ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "gpu", Counters: map[string]resourcev1.Counter{
					"memory": {Value: resource.MustParse("8")}}}}}},
		}
		return s
	}
	n := dra.NewAllocator(classes).Node("node-a", nil, []*resourcev1.ResourceSlice{slice("s0"), slice("s1")})
	_, ok, err := n.Allocate(context.Background(), []*resourcev1.ResourceClaim{claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)})})
	if ok || err == nil || !strings.Contains(err.Error(), "invalid resource pools") {
		t.Errorf("Allocate = ok %v, err %v; want an error about the invalid pool", ok, err)
	}
}

func ptrTo[T any](v T) *T { return &v }
