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

// deviceModels are the device models of the catalog's instance types, NVIDIA GPUs and EFA included.
func deviceModels(t *testing.T) *devices.Models {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	models, err := devices.New(cat, devices.Options{NVIDIAGPU: true, EFA: true})
	if err != nil {
		t.Fatal(err)
	}
	return models
}

func modelSlices(t *testing.T, instanceType, node string) []*resourcev1.ResourceSlice {
	t.Helper()
	models := deviceModels(t)
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

// TestSelectorMemo: a selector is evaluated once per Allocator for each set of values it reads from devices (MIG
// devices of one profile share one evaluation), and once per device when it reads more; later fits on the same
// devices, of the same claim or of another claim of the same class, find the outcomes remembered.
func TestSelectorMemo(t *testing.T) {
	ctx := context.Background()
	slices := modelSlices(t, "p4d.24xlarge", "node-a")
	gpuDevices, efaDevices := countDevices(slices, "gpu.nvidia.com"), countDevices(slices, "dra.net")
	migDevices := gpuDevices - 8 // all but the eight whole GPUs
	profiles := map[string]bool{}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if p := d.Attributes["profile"].StringValue; p != nil {
				profiles[*p] = true
			}
		}
	}
	a := dra.NewAllocator(classes)
	n := a.Node("node-a", nil, slices)
	mig := claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].profile == "1g.5gb"`)})
	migOther := claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].profile == "3g.20gb"`)})
	migPerDevice := claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, `"profile" in device.attributes["gpu.nvidia.com"]`)})
	lookups := gpuDevices + efaDevices + migDevices // the class selector on every device, the request's on the MIG devices

	if got, err := n.Fit(ctx, []*resourcev1.ResourceClaim{mig}, 100); err != nil || got != 56 {
		t.Fatalf("Fit = %d, %v; want 56", got, err)
	}
	hits, misses := a.SelectorLookups()
	// The class selector reads the driver and the type: GPU, MIG and EFA devices; the request's the profile.
	if want := 3 + len(profiles); misses != want || hits+misses != lookups {
		t.Errorf("first fit: hits %d, misses %d; want %d, %d", hits, misses, lookups-want, want)
	}

	if _, err := n.Fit(ctx, []*resourcev1.ResourceClaim{mig}, 100); err != nil {
		t.Fatal(err)
	}
	hits2, misses2 := a.SelectorLookups()
	if misses2 != misses || hits2-hits != lookups {
		t.Errorf("same claim again: %d new misses, %d new hits; want 0, %d", misses2-misses, hits2-hits, lookups)
	}

	if got, err := n.Fit(ctx, []*resourcev1.ResourceClaim{migOther}, 100); err != nil || got != 16 {
		t.Fatalf("Fit = %d, %v; want 16", got, err)
	}
	hits3, misses3 := a.SelectorLookups()
	// Only the new profile selector is evaluated, once per profile; the class outcomes are remembered.
	if misses3-misses2 != len(profiles) || hits3-hits2 != lookups-len(profiles) {
		t.Errorf("same class, other selector: %d new misses, %d new hits; want %d, %d", misses3-misses2, hits3-hits2,
			len(profiles), lookups-len(profiles))
	}

	if got, err := n.Fit(ctx, []*resourcev1.ResourceClaim{migPerDevice}, 100); err != nil || got != 56 {
		t.Fatalf("Fit = %d, %v; want 56 (the smallest profile)", got, err)
	}
	hits4, misses4 := a.SelectorLookups()
	// A selector reading the attribute map itself is evaluated on each MIG device.
	if misses4-misses3 != migDevices || hits4-hits3 != lookups-migDevices {
		t.Errorf("selector on the whole map: %d new misses, %d new hits; want %d, %d", misses4-misses3, hits4-hits3,
			migDevices, lookups-migDevices)
	}

	// Another Allocator remembers nothing of this one.
	b := dra.NewAllocator(classes)
	if _, err := b.Node("node-a", nil, slices).Fit(ctx, []*resourcev1.ResourceClaim{mig}, 1); err != nil {
		t.Fatal(err)
	}
	if _, m := b.SelectorLookups(); m != misses {
		t.Errorf("new allocator: misses %d; want %d", m, misses)
	}
}

// TestSelectorReads: which expressions are evaluated once per set of values they read, and which values.
func TestSelectorReads(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string // nil: evaluated per device
	}{
		{`true`, []string{}},
		{`device.driver == "gpu.nvidia.com"`, []string{"driver"}},
		{`device.allowMultipleAllocations`, []string{"multi"}},
		{`device.attributes["gpu.nvidia.com"].productName == "A" && device.driver == "gpu.nvidia.com"`,
			[]string{"attribute gpu.nvidia.com/productName", "driver"}},
		{`device.attributes["d"]["n"] == 1`, []string{"attribute d/n"}},
		{`has(device.attributes["d"].n) && device.attributes["d"].n`, []string{"attribute d/n", "attribute d/n"}},
		{`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`, []string{"capacity gpu.nvidia.com/memory"}},
		{`"n" in device.attributes["d"]`, nil},
		{`device.attributes["d"].exists(k, k == "n")`, nil},
		{`device.attributes[device.driver].n == 1`, nil},
		{`device.attributes.size() > 0`, nil},
		{`[1].exists(device, device == 1)`, nil},
		{`device == device`, nil},
		{`device.attributes["d"].n ==`, nil}, // does not parse
	} {
		got, ok := dra.SelectorReads(tc.expr)
		if ok != (tc.want != nil) {
			t.Errorf("%s: per set of values = %v, want %v (reads %v)", tc.expr, ok, tc.want != nil, got)
			continue
		}
		if diff := cmp.Diff(tc.want, got); ok && diff != "" {
			t.Errorf("%s: reads (-want +got):\n%s", tc.expr, diff)
		}
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
		"whole map":         claim([]resourcev1.DeviceRequest{exact("m", "mig.nvidia.com", 1, `"profile" in device.attributes["gpu.nvidia.com"] && device.attributes["gpu.nvidia.com"].profile.startsWith("2g")`)}),
		"computed key":      claim([]resourcev1.DeviceRequest{exact("g", "gpu.nvidia.com", 1, `device.attributes[device.driver].architecture == "Ampere"`)}),
		"qualified name":    claim([]resourcev1.DeviceRequest{exact("e", "efa.dra.net", 1, `device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:20"`)}),
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
		"runtime CEL error", "unknown class", "first available", "whole map", "computed key", "qualified name"}
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
