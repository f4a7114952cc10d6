package devices

import (
	"crypto/sha256"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// NVIDIADriver is the driver name of the NVIDIA GPU DRA driver.
const NVIDIADriver = "gpu.nvidia.com"

// PCIeRootAttribute is the standard attribute that places a device under a PCIe root complex; a claim ties devices
// of several drivers together with a matchAttribute constraint on it.
const PCIeRootAttribute resourcev1.QualifiedName = "resource.kubernetes.io/pcieRoot"

// Counter names of the counter set each MIG-capable GPU shares between its whole-GPU device and its MIG devices.
// A GPU has eight memory slices and seven compute slices; a MIG profile consumes some of each, the whole GPU all.
const (
	counterMemory        = "memory"
	counterComputeSlices = "compute-slices"
	memorySlices         = 8
	computeSlices        = 7
)

// gpuProduct is what the driver reports for one GPU product. mig is empty for a GPU without MIG.
type gpuProduct struct {
	productName       string
	architecture      string
	computeCapability string
	mig               []migProfile
}

// migProfile is one MIG profile: its name as nvidia-smi spells it (1g.5gb), the compute and memory slices it
// takes, and how many of it fit on one GPU.
type migProfile struct {
	name           string
	compute, slots int
	max            int
}

// migProfiles builds the six profiles of an A100/H100-class GPU whose memory slice is named by sliceGB (the
// profile names carry rounded figures, so they are given).
func migProfiles(names [6]string) []migProfile {
	return []migProfile{
		{names[0], 1, 1, 7}, {names[1], 1, 2, 4}, {names[2], 2, 2, 3},
		{names[3], 3, 4, 2}, {names[4], 4, 4, 1}, {names[5], 7, 8, 1},
	}
}

// gpuProductFor returns the driver's view of a catalog GPU, keyed by the catalog's name and per-GPU memory.
func gpuProductFor(g catalog.GPU) (gpuProduct, bool) {
	switch g.Name {
	case "T4":
		return gpuProduct{"Tesla T4", "Turing", "7.5.0", nil}, true
	case "T4G":
		return gpuProduct{"NVIDIA T4G", "Turing", "7.5.0", nil}, true
	case "A10G":
		return gpuProduct{"NVIDIA A10G", "Ampere", "8.6.0", nil}, true
	case "L4":
		return gpuProduct{"NVIDIA L4", "Ada Lovelace", "8.9.0", nil}, true
	case "L40S":
		return gpuProduct{"NVIDIA L40S", "Ada Lovelace", "8.9.0", nil}, true
	case "V100":
		if g.MemoryMiB >= 32*1024 {
			return gpuProduct{"Tesla V100-SXM2-32GB", "Volta", "7.0.0", nil}, true
		}
		return gpuProduct{"Tesla V100-SXM2-16GB", "Volta", "7.0.0", nil}, true
	case "A100":
		if g.MemoryMiB >= 80*1024 {
			return gpuProduct{"NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0",
				migProfiles([6]string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"})}, true
		}
		return gpuProduct{"NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0",
			migProfiles([6]string{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"})}, true
	case "H100":
		return gpuProduct{"NVIDIA H100 80GB HBM3", "Hopper", "9.0.0",
			migProfiles([6]string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"})}, true
	case "H200":
		return gpuProduct{"NVIDIA H200", "Hopper", "9.0.0",
			migProfiles([6]string{"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"})}, true
	}
	return gpuProduct{}, false
}

// pcieRoot names the r-th PCIe root complex of a node.
func pcieRoot(r int) string { return fmt.Sprintf("pci0000:%02x", 0x10*(r+1)) }

// rootOf spreads n devices in order over roots roots: device i sits on root i*roots/n.
func rootOf(i, n, roots int) int {
	if roots <= 1 || n <= 0 {
		return 0
	}
	return i * roots / n
}

// deviceUUID derives a stable UUID-shaped identifier for a device from the node it is on and its name.
func deviceUUID(prefix, nodeName, device string) string {
	sum := sha256.Sum256([]byte(nodeName + "/" + device))
	h := fmt.Sprintf("%x", sum[:16])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", prefix, h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

func str(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &s} }
func ver(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{VersionValue: &s} }
func intv(i int) resourcev1.DeviceAttribute {
	v := int64(i)
	return resourcev1.DeviceAttribute{IntValue: &v}
}
func boolv(b bool) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{BoolValue: &b} }
func mib(n int64) resource.Quantity           { return *resource.NewQuantity(n*1024*1024, resource.BinarySI) }
func count(n int64) resource.Quantity         { return *resource.NewQuantity(n, resource.DecimalSI) }
func migName(gpu int, profile string, k int) string {
	return fmt.Sprintf("gpu-%d-mig-%s-%d", gpu, strings.ReplaceAll(profile, ".", "-"), k)
}

// nvidiaSlices returns the GPU driver's slices for an instance type on nodeName, given the number of PCIe roots
// the node's devices are spread over. A node without MIG-capable GPUs gets one slice; a node with them gets one
// slice per GPU, each holding the GPU's counter set, the whole GPU and every MIG placement.
func nvidiaSlices(it *catalog.InstanceType, nodeName string, roots int) []resourcev1.ResourceSlice {
	type gpu struct {
		product gpuProduct
		memMiB  int64
	}
	var gpus []gpu
	for _, g := range it.GPUs {
		if !strings.EqualFold(g.Manufacturer, "NVIDIA") {
			continue
		}
		p, ok := gpuProductFor(g)
		if !ok {
			continue
		}
		for range g.Count {
			gpus = append(gpus, gpu{p, g.MemoryMiB})
		}
	}
	if len(gpus) == 0 {
		return nil
	}
	partitioned := false
	for _, g := range gpus {
		partitioned = partitioned || len(g.product.mig) > 0
	}
	var groups [][]resourcev1.Device
	var counters [][]resourcev1.CounterSet
	for i, g := range gpus {
		name := fmt.Sprintf("gpu-%d", i)
		uuid := deviceUUID("GPU", nodeName, name)
		root := pcieRoot(rootOf(i, len(gpus), roots))
		attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type": str("gpu"), "uuid": str(uuid), "index": intv(i), "minor": intv(i),
			"productName": str(g.product.productName), "brand": str("Nvidia"),
			"architecture": str(g.product.architecture), "cudaComputeCapability": ver(g.product.computeCapability),
			PCIeRootAttribute: str(root),
		}
		whole := resourcev1.Device{Name: name, Attributes: attrs,
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: mib(g.memMiB)}}}
		if len(g.product.mig) == 0 {
			if len(groups) == 0 || partitioned {
				groups = append(groups, nil)
				counters = append(counters, nil)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], whole)
			continue
		}
		set := name + "-counter-set"
		sliceMiB := g.memMiB / memorySlices
		consume := func(compute, slots int) []resourcev1.DeviceCounterConsumption {
			return []resourcev1.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourcev1.Counter{
				counterMemory: {Value: mib(sliceMiB * int64(slots))}, counterComputeSlices: {Value: count(int64(compute))},
			}}}
		}
		whole.ConsumesCounters = consume(computeSlices, memorySlices)
		devs := []resourcev1.Device{whole}
		for _, p := range g.product.mig {
			for k := range p.max {
				mname := migName(i, p.name, k)
				devs = append(devs, resourcev1.Device{
					Name: mname,
					Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
						"type": str("mig"), "profile": str(p.name), "uuid": str(deviceUUID("MIG", nodeName, mname)),
						"parentIndex": intv(i), "parentUUID": str(uuid),
						"productName": str(g.product.productName), "brand": str("Nvidia"),
						"architecture": str(g.product.architecture), "cudaComputeCapability": ver(g.product.computeCapability),
						PCIeRootAttribute: str(root),
					},
					Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
						"memory": {Value: mib(sliceMiB * int64(p.slots))}},
					ConsumesCounters: consume(p.compute, p.slots),
				})
			}
		}
		groups = append(groups, devs)
		counters = append(counters, []resourcev1.CounterSet{{Name: set, Counters: map[string]resourcev1.Counter{
			counterMemory: {Value: mib(sliceMiB * memorySlices)}, counterComputeSlices: {Value: count(computeSlices)},
		}}})
	}
	return poolSlices(NVIDIADriver, nodeName, groups, counters)
}

// poolSlices wraps device groups into the slices of one pool named after the node.
func poolSlices(driver, nodeName string, groups [][]resourcev1.Device, counters [][]resourcev1.CounterSet) []resourcev1.ResourceSlice {
	out := make([]resourcev1.ResourceSlice, 0, len(groups))
	for k, devs := range groups {
		node := nodeName
		s := resourcev1.ResourceSlice{
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   driver,
				NodeName: &node,
				Pool:     resourcev1.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: int64(len(groups))},
				Devices:  devs,
			},
		}
		s.Name = fmt.Sprintf("%s-%s-%d", nodeName, driver, k)
		if counters != nil {
			s.Spec.SharedCounters = counters[k]
		}
		out = append(out, s)
	}
	return out
}
