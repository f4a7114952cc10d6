package dra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/dra"
	"github.com/dovetail/dovetail/pkg/dra/devices"
)

func class(name, expr string) *resourcev1.DeviceClass {
	c := &resourcev1.DeviceClass{}
	c.Name = name
	c.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}
	return c
}

var classes = []*resourcev1.DeviceClass{
	class("gpu.nvidia.com", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`),
	class("mig.nvidia.com", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`),
	class("efa.dra.net", `device.driver == "dra.net" && device.attributes["dra.net"].rdma == true`),
}

func exact(name, className string, n int64, selectors ...string) resourcev1.DeviceRequest {
	r := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: className,
		AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return r
}

func claim(requests []resourcev1.DeviceRequest, constraints ...resourcev1.DeviceConstraint) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{}
	c.Name, c.Namespace, c.UID = "c", "default", types.UID("uid-c")
	c.Spec.Devices.Requests = requests
	c.Spec.Devices.Constraints = constraints
	return c
}

func samePCIeRoot(requests ...string) resourcev1.DeviceConstraint {
	a := resourcev1.FullyQualifiedName(devices.PCIeRootAttribute)
	return resourcev1.DeviceConstraint{Requests: requests, MatchAttribute: &a}
}

func TestFit(t *testing.T) {
	models := deviceModels(t)
	a := dra.NewAllocator(classes)
	migProfile := func(p string) string { return fmt.Sprintf(`device.attributes["gpu.nvidia.com"].profile == %q`, p) }
	cases := []struct {
		name, instanceType string
		before             *resourcev1.ResourceClaim // allocated once first
		claim              *resourcev1.ResourceClaim
		want               int
	}{
		{"one GPU on a one-GPU type", "g5.xlarge", nil, claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)}), 1},
		{"one GPU on an eight-GPU type", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)}), 8},
		{"no GPU on a CPU type", "m5.large", nil, claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)}), 0},
		{"product selector", "g5.12xlarge", nil, claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1,
			`device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-40GB"`)}), 0},
		{"memory selector", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 2,
			`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`)}), 4},
		{"compute capability selector", "g6.xlarge", nil, claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1,
			`device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))`)}), 1},
		{"all GPUs", "g5.12xlarge", nil, claim([]resourcev1.DeviceRequest{{Name: "g", Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeAll}}}), 1},
		{"smallest MIG slices", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, migProfile("1g.5gb"))}), 56},
		{"half-GPU MIG slices", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, migProfile("3g.20gb"))}), 16},
		{"MIG after a whole GPU is taken", "p4d.24xlarge", claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 3)}),
			claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, migProfile("7g.40gb"))}), 5},
		{"two GPUs and an EFA on one PCIe root, p4d", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{
			exact("g", "gpu.nvidia.com", 2), exact("e", "efa.dra.net", 1)}, samePCIeRoot()), 4},
		{"two GPUs and an EFA on one PCIe root, g5.48xlarge", "g5.48xlarge", nil, claim([]resourcev1.DeviceRequest{
			exact("g", "gpu.nvidia.com", 2), exact("e", "efa.dra.net", 1)}, samePCIeRoot()), 1},
		{"four GPUs on one PCIe root, p4d", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{
			exact("g", "gpu.nvidia.com", 4)}, samePCIeRoot()), 0},
		{"first available: H100 else A100", "p4d.24xlarge", nil, claim([]resourcev1.DeviceRequest{{Name: "g",
			FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "h100", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
					Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].architecture == "Hopper"`}}}},
				{Name: "a100", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
					Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].architecture == "Ampere"`}}}},
			}}}), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var slices []*resourcev1.ResourceSlice
			for _, s := range models.Slices(tc.instanceType, "node-a") {
				slices = append(slices, &s)
			}
			n := a.Node("node-a", nil, slices)
			if tc.before != nil {
				if _, ok, err := n.Allocate(context.Background(), []*resourcev1.ResourceClaim{tc.before}); err != nil || !ok {
					t.Fatalf("first claim: ok=%v err=%v", ok, err)
				}
			}
			got, err := n.Fit(context.Background(), []*resourcev1.ResourceClaim{tc.claim}, 100)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Fit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAllocateUnknownClass(t *testing.T) {
	a := dra.NewAllocator(classes)
	s := devices.Options{NVIDIAGPU: true}
	cat, _ := catalog.Load()
	m, _ := devices.New(cat, s)
	var slices []*resourcev1.ResourceSlice
	for _, x := range m.Slices("g5.xlarge", "n") {
		slices = append(slices, &x)
	}
	_, _, err := a.Node("n", nil, slices).Allocate(context.Background(), []*resourcev1.ResourceClaim{
		claim([]resourcev1.DeviceRequest{exact("g", "tpu.example.com", 1)})})
	if err == nil || !strings.Contains(err.Error(), "tpu.example.com") {
		t.Errorf("err = %v, want one naming the missing class", err)
	}
}
