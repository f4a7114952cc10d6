package dra

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// counterSliceSuffix names the counter-set half of a slice split by splitSharedCounters. The name never reaches an
// API server; it only has to differ from every other slice name the allocator sees.
const counterSliceSuffix = "/shared-counters"

// splitSharedCounters returns slices in the layout the structured allocator of Kubernetes 1.35 reads, where the
// counter sets of a pool are published in ResourceSlices of their own and shared by the whole pool.
//
// Up to Kubernetes 1.34 a slice held its counter sets next to the devices consuming them (the layout of a 1.34
// cluster's DRA drivers and of the device models in pkg/dra/devices). The 1.35 allocator takes any slice with
// counter sets for a counter-only slice and skips its devices, so such a slice is split in two: one with its counter
// sets, one with its devices. The pool's ResourceSliceCount grows by the slices split, so a pool stays complete
// exactly when all its slices are present. Counter-set names, unique per slice before 1.35, must then be unique in
// the pool; a pool where they are not is invalid, which the allocator reports.
//
// The input is not changed; slices already in the 1.35 layout are returned as they are. (The nested module
// test/oracle builds this package with the 1.34 allocator, which reads counters per slice; its device models carry
// no counters.)
func splitSharedCounters(slices []*resourcev1.ResourceSlice) []*resourcev1.ResourceSlice {
	type poolGeneration struct {
		driver, pool string
		generation   int64
	}
	key := func(s *resourcev1.ResourceSlice) poolGeneration {
		return poolGeneration{s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Pool.Generation}
	}
	mixed := func(s *resourcev1.ResourceSlice) bool {
		return len(s.Spec.Devices) > 0 && len(s.Spec.SharedCounters) > 0
	}
	extra := map[poolGeneration]int64{}
	for _, s := range slices {
		if mixed(s) {
			extra[key(s)]++
		}
	}
	if len(extra) == 0 {
		return slices
	}
	out := make([]*resourcev1.ResourceSlice, 0, len(slices)+len(extra))
	for _, s := range slices {
		n, ok := extra[key(s)]
		if !ok {
			out = append(out, s)
			continue
		}
		if !mixed(s) {
			c := *s
			c.Spec.Pool.ResourceSliceCount += n
			out = append(out, &c)
			continue
		}
		counters, devs := *s, *s
		counters.Name += counterSliceSuffix
		counters.Spec.Devices = nil
		counters.Spec.Pool.ResourceSliceCount += n
		devs.Spec.SharedCounters = nil
		devs.Spec.Pool.ResourceSliceCount += n
		out = append(out, &counters, &devs)
	}
	return out
}
