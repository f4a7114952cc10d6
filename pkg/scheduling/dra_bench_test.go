package scheduling_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// draBenchSnapshot is count claim pods spread evenly over ten device classes (one per GPU product, MIG slices, and
// GPUs with EFA on one PCIe root), against the CPU benchmark types plus every catalog type with NVIDIA GPUs (their
// us-east-1 shapes and on-demand prices) and the built-in NVIDIA GPU and EFA models.
func draBenchSnapshot(tb testing.TB, count int) *scheduling.Snapshot {
	tb.Helper()
	cat, err := catalog.Load()
	if err != nil {
		tb.Fatal(err)
	}
	models, err := devices.New(cat, devices.Options{NVIDIAGPU: true, EFA: true})
	if err != nil {
		tb.Fatal(err)
	}
	types := test.BenchmarkInstanceTypes()
	for _, it := range cat.Types {
		o, ok := it.Offerings["us-east-1"]
		if !ok || len(it.GPUs) == 0 || it.GPUs[0].Manufacturer != "NVIDIA" {
			continue
		}
		b := test.SchedInstanceType(it.Name, fmt.Sprint(it.VCPU), fmt.Sprintf("%dMi", it.MemoryMiB*9/10)).Zones(o.OnDemandUSD, "a", "b", "c")
		if len(it.Architectures) > 0 && it.Architectures[0] == "arm64" {
			b.Label(corev1.LabelArchStable, "arm64")
		}
		types = append(types, b.Obj())
	}
	product := func(p string) string {
		return fmt.Sprintf(`device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" && device.attributes["gpu.nvidia.com"].productName == %q`, p)
	}
	classes := []*resourcev1.DeviceClass{
		test.DeviceClass("t4", product("Tesla T4")),
		test.DeviceClass("a10g", product("NVIDIA A10G")),
		test.DeviceClass("l4", product("NVIDIA L4")),
		test.DeviceClass("l40s", product("NVIDIA L40S")),
		test.DeviceClass("v100", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName.startsWith("Tesla V100")`),
		test.DeviceClass("a100", product("NVIDIA A100-SXM4-40GB")),
		test.DeviceClass("h100", product("NVIDIA H100 80GB HBM3")),
		test.DeviceClass("mig", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`),
		test.DeviceClass("gpu", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`),
		test.DeviceClass("efa", `device.driver == "dra.net"`),
	}
	templates := []*resourcev1.ResourceClaimTemplate{
		test.ClaimSpec().Exactly("gpu", "t4", 1).Template("default", "t4"),
		test.ClaimSpec().Exactly("gpu", "a10g", 1).Template("default", "a10g"),
		test.ClaimSpec().Exactly("gpu", "l4", 1).Template("default", "l4"),
		test.ClaimSpec().Exactly("gpu", "l40s", 2).Template("default", "l40s"),
		test.ClaimSpec().Exactly("gpu", "v100", 1).Template("default", "v100"),
		test.ClaimSpec().Exactly("gpu", "a100", 1).Template("default", "a100"),
		test.ClaimSpec().Exactly("gpu", "h100", 4).Template("default", "h100"),
		test.ClaimSpec().Exactly("mig", "mig", 1, `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`).Template("default", "mig"),
		test.ClaimSpec().Exactly("gpu", "gpu", 1, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`).Template("default", "big"),
		test.ClaimSpec().Exactly("gpu", "gpu", 2).Exactly("nic", "efa", 1).SameAttribute(string(devices.PCIeRootAttribute)).Template("default", "gpu-efa"),
	}
	pods := make([]*corev1.Pod, 0, count)
	for i := range count {
		t := templates[i%len(templates)]
		pods = append(pods, test.SchedPod(fmt.Sprintf("%s-%d", t.Name, i)).Requests("1", "4Gi").ClaimTemplate("gpu", t.Name).Obj())
	}
	return &scheduling.Snapshot{Pods: pods, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": types},
		DRA:           &scheduling.DRA{ClaimTemplates: templates, DeviceClasses: classes, Models: models}}
}

// BenchmarkDRAScheduling plans 5,000 claim pods across ten device classes.
func BenchmarkDRAScheduling(b *testing.B) {
	snap := draBenchSnapshot(b, 5000)
	b.ResetTimer()
	for range b.N {
		plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{Bound: scheduling.BoundNone})
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Unschedulable) > 0 {
			b.Fatalf("%d pods unschedulable, first: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
		}
		b.ReportMetric(float64(len(plan.NodeClaims)), "nodeclaims")
		b.ReportMetric(plan.Cost, "USD/h")
	}
}

// TestDRAPlanTime: the benchmark's 5,000 claim pods are all placed.
func TestDRAPlanTime(t *testing.T) {
	if testing.Short() {
		t.Skip("plans 5,000 pods")
	}
	snap := draBenchSnapshot(t, 5000)
	start := time.Now()
	plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{Bound: scheduling.BoundNone})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("%d pods unschedulable, first %s: %s", len(plan.Unschedulable), plan.Unschedulable[0].Pod, plan.Unschedulable[0].Reason)
	}
	placed := len(plan.Placements)
	for _, nc := range plan.NodeClaims {
		placed += len(nc.Pods)
	}
	if placed != len(snap.Pods) {
		t.Errorf("%d of %d pods placed", placed, len(snap.Pods))
	}
	// The time is logged, not asserted: it depends on the machine's load (figures in docs/benchmarks.md).
	t.Logf("5,000 claim pods: %d NodeClaims, %.2f USD/h, %v", len(plan.NodeClaims), plan.Cost, took)
}
