package dra_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/dra"
	"github.com/dovetail/dovetail/pkg/dra/devices"
)

func modelSlices(t *testing.T, instanceType, node string) []*resourcev1.ResourceSlice {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	models, err := devices.New(cat, devices.Options{NVIDIAGPU: true, EFA: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []*resourcev1.ResourceSlice
	for _, s := range models.Slices(instanceType, node) {
		out = append(out, &s)
	}
	return out
}

func countDevices(slices []*resourcev1.ResourceSlice, driver string) int {
	n := 0
	for _, s := range slices {
		if s.Spec.Driver == driver {
			n += len(s.Spec.Devices)
		}
	}
	return n
}

// TestSelectorMemo: each (selector, device) pair is evaluated once per Allocator; later fits on the same devices,
// of the same claim or of another claim of the same class, find the outcomes remembered.
func TestSelectorMemo(t *testing.T) {
	ctx := context.Background()
	slices := modelSlices(t, "p4d.24xlarge", "node-a")
	gpuDevices, efaDevices := countDevices(slices, "gpu.nvidia.com"), countDevices(slices, "dra.net")
	a := dra.NewAllocator(classes)
	n := a.Node("node-a", nil, slices)
	mig := claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].profile == "1g.5gb"`)})
	migOther := claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].profile == "3g.20gb"`)})

	if got, err := n.Fit(ctx, []*resourcev1.ResourceClaim{mig}, 100); err != nil || got != 56 {
		t.Fatalf("Fit = %d, %v; want 56", got, err)
	}
	hits, misses := a.SelectorLookups()
	migDevices := gpuDevices - 8 // all but the eight whole GPUs
	// The class selector on every device, the profile selector on the MIG devices the class lets through.
	if want := gpuDevices + efaDevices + migDevices; misses != want || hits != 0 {
		t.Errorf("first fit: hits %d, misses %d; want 0, %d", hits, misses, want)
	}

	if _, err := n.Fit(ctx, []*resourcev1.ResourceClaim{mig}, 100); err != nil {
		t.Fatal(err)
	}
	hits2, misses2 := a.SelectorLookups()
	if misses2 != misses || hits2-hits != misses {
		t.Errorf("same claim again: %d new misses, %d new hits; want 0, %d", misses2-misses, hits2-hits, misses)
	}

	if got, err := n.Fit(ctx, []*resourcev1.ResourceClaim{migOther}, 100); err != nil || got != 16 {
		t.Fatalf("Fit = %d, %v; want 16", got, err)
	}
	hits3, misses3 := a.SelectorLookups()
	// Only the new profile selector is evaluated, on the MIG devices; the class outcomes are remembered.
	if misses3-misses2 != migDevices || hits3-hits2 != gpuDevices+efaDevices {
		t.Errorf("same class, other selector: %d new misses, %d new hits; want %d, %d", misses3-misses2, hits3-hits2,
			migDevices, gpuDevices+efaDevices)
	}

	// Another Allocator remembers nothing of this one.
	b := dra.NewAllocator(classes)
	if _, err := b.Node("node-a", nil, slices).Fit(ctx, []*resourcev1.ResourceClaim{mig}, 1); err != nil {
		t.Fatal(err)
	}
	if h, m := b.SelectorLookups(); h != 0 || m != misses {
		t.Errorf("new allocator: hits %d, misses %d; want 0, %d", h, m, misses)
	}
}

// TestNarrowedSameAsUncached: with the devices no request can use set aside, Fit and Allocate answer exactly as the
// structured allocator does on every device: the same counts, the same devices, the same errors.
func TestNarrowedSameAsUncached(t *testing.T) {
	ctx := context.Background()
	migProfile := func(p string) string { return fmt.Sprintf(`device.attributes["gpu.nvidia.com"].profile == %q`, p) }
	claims := map[string]*resourcev1.ResourceClaim{
		"one GPU":           claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1)}),
		"three GPUs":        claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 3)}),
		"40Gi GPUs":         claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 2, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`)}),
		"1g MIG":            claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, migProfile("1g.5gb"))}),
		"3g MIG":            claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, migProfile("3g.20gb"))}),
		"7g MIG":            claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, migProfile("7g.40gb"))}),
		"GPUs and EFA":      claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 2), exact("e", "efa.dra.net", 1)}, samePCIeRoot()),
		"all EFA":           claim([]resourcev1.DeviceRequest{{Name: "e", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "efa.dra.net", AllocationMode: resourcev1.DeviceAllocationModeAll}}}),
		"runtime CEL error": claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].profile == "1g.5gb"`)}),
		"unknown class":     claim([]resourcev1.DeviceRequest{exact("g", "tpu.example.com", 1)}),
		"first available": claim([]resourcev1.DeviceRequest{{Name: "g", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "h100", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].architecture == "Hopper"`}}}},
			{Name: "mig", DeviceClassName: "mig.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: migProfile("2g.10gb")}}}},
		}}}),
	}
	names := []string{"one GPU", "three GPUs", "40Gi GPUs", "1g MIG", "3g MIG", "7g MIG", "GPUs and EFA", "all EFA",
		"runtime CEL error", "unknown class", "first available"}
	// Sequences allocated one claim after another on one node, then each claim fitted on what is left.
	sequences := [][]string{
		nil,
		{"one GPU"},
		{"3g MIG", "1g MIG", "1g MIG"},
		{"7g MIG", "GPUs and EFA", "first available", "1g MIG"},
		{"three GPUs", "all EFA"},
	}
	for _, it := range []string{"p4d.24xlarge", "p5.48xlarge", "g5.48xlarge", "g6.xlarge", "m5.large"} {
		slices := modelSlices(t, it, "node-a")
		for si, seq := range sequences {
			t.Run(fmt.Sprintf("%s/%d", it, si), func(t *testing.T) {
				a := dra.NewAllocator(classes)
				narrowed, plain := a.Node("node-a", nil, slices), dra.NewAllocator(classes).Node("node-a", nil, slices)
				for _, name := range seq {
					c := []*resourcev1.ResourceClaim{claims[name]}
					got, gotOK, gotErr := narrowed.Allocate(ctx, c)
					want, wantOK, wantErr := plain.AllocateUncached(ctx, c)
					if gotOK != wantOK || (gotErr == nil) != (wantErr == nil) {
						t.Fatalf("Allocate %s: ok %v err %v; uncached ok %v err %v", name, gotOK, gotErr, wantOK, wantErr)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("Allocate %s: results differ from uncached (-uncached +narrowed):\n%s", name, diff)
					}
				}
				for _, name := range names {
					c := []*resourcev1.ResourceClaim{claims[name]}
					got, gotErr := narrowed.Fit(ctx, c, 64)
					want, wantErr := plain.FitUncached(ctx, c, 64)
					if got != want || (gotErr == nil) != (wantErr == nil) {
						t.Errorf("Fit %s = %d, %v; uncached %d, %v", name, got, gotErr, want, wantErr)
					}
				}
			})
		}
	}
}
