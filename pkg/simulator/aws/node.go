package awssim

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// VMMemoryOverheadPercent is the share of memory the hypervisor keeps from the guest.
const VMMemoryOverheadPercent = 0.075

// ENIMaxPods is the EKS ENI-limited pod count: (ENIs − 0 reserved) × (IPv4 per ENI − 1) + 2.
func ENIMaxPods(t *catalog.InstanceType) int {
	return t.MaxENIs*(t.IPv4PerENI-1) + 2
}

// KubeReservedCPUMilli is the EKS AMI cpu reservation: 6% of the first core, 1% of the second, 0.5% of cores
// 3–4 and 0.25% of the rest.
func KubeReservedCPUMilli(vcpu int) int64 {
	var m float64
	for core := 1; core <= vcpu; core++ {
		switch {
		case core == 1:
			m += 60
		case core == 2:
			m += 10
		case core <= 4:
			m += 5
		default:
			m += 2.5
		}
	}
	return int64(math.Round(m))
}

// KubeReservedMemoryMiB is the EKS AMI memory reservation: 11 MiB per pod plus 255 MiB.
func KubeReservedMemoryMiB(maxPods int) int64 { return int64(11*maxPods + 255) }

// buildNodeSpec computes the Node of an instance from the catalog and its bootstrap settings.
func (s *Simulator) buildNodeSpec(i *instance, t *catalog.InstanceType, b Bootstrap) (NodeSpec, error) {
	maxPods := ENIMaxPods(t)
	if b.MaxPods != nil {
		maxPods = *b.MaxPods
	}
	arch := catalog.KubeArch(i.Arch)
	osName := "linux"
	if b.Format == "windows" {
		osName = "windows"
	}
	labels := map[string]string{}
	for k, v := range b.Labels {
		labels[k] = v
	}
	for k, v := range map[string]string{
		corev1.LabelHostname:                       i.PrivateDNS,
		corev1.LabelArchStable:                     arch,
		corev1.LabelOSStable:                       osName,
		corev1.LabelInstanceTypeStable:             i.Type,
		corev1.LabelTopologyZone:                   i.Zone,
		corev1.LabelTopologyRegion:                 s.opts.Region,
		"topology.k8s.aws/zone-id":                 i.ZoneID,
		"node.kubernetes.io/lifecycle":             map[bool]string{true: "spot", false: "normal"}[i.Spot],
		"beta.kubernetes.io/arch":                  arch,
		"beta.kubernetes.io/os":                    osName,
		"failure-domain.beta.kubernetes.io/zone":   i.Zone,
		"failure-domain.beta.kubernetes.io/region": s.opts.Region,
		"beta.kubernetes.io/instance-type":         i.Type,
		"k8s.io/cloud-provider-aws":                "awssim",
	} {
		labels[k] = v
	}
	taints := append([]corev1.Taint(nil), b.Taints...)
	taints = append(taints, corev1.Taint{Key: UninitializedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})

	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(t.VCPU), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(float64(t.MemoryMiB)*(1-VMMemoryOverheadPercent))*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(i.RootGiB)*1024*1024*1024, resource.BinarySI),
	}
	if b.InstanceStoreRAID0 && t.LocalStorageGB > 0 {
		// The instance store disks, one RAID0 array, hold containerd, the kubelet and pod logs.
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewScaledQuantity(int64(t.LocalStorageGB), resource.Giga)
	}
	for _, g := range t.GPUs {
		name := map[string]corev1.ResourceName{"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu"}[g.Manufacturer]
		if name != "" {
			capacity[name] = *resource.NewQuantity(int64(g.Count), resource.DecimalSI)
		}
	}
	for _, a := range t.Accelerators {
		capacity["aws.amazon.com/neuron"] = *resource.NewQuantity(int64(a.Count), resource.DecimalSI)
		// The Neuron device plugin also advertises the devices' NeuronCores.
		if cores, _, ok := neuronCores(a.Name); ok {
			capacity["aws.amazon.com/neuroncore"] = *resource.NewQuantity(int64(a.Count)*cores, resource.DecimalSI)
		}
	}
	if n := catalog.BranchENIs(t.Name); n > 0 && osName == "linux" {
		// Security groups for pods on: the VPC resource controller advertises the branch interfaces of trunking types.
		capacity["vpc.amazonaws.com/pod-eni"] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	if n := efaInterfaceCount(i.NetworkInterfaces); n > 0 && osName == "linux" {
		// The EFA device plugin advertises the instance's EFA interfaces (efa and efa-only).
		capacity["vpc.amazonaws.com/efa"] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	if osName == "windows" && t.IPv4PerENI > 1 {
		// The VPC resource controller gives Windows nodes the secondary addresses of their primary interface.
		capacity["vpc.amazonaws.com/PrivateIPv4Address"] = *resource.NewQuantity(int64(t.IPv4PerENI-1), resource.DecimalSI)
	}

	reserved := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(KubeReservedCPUMilli(t.VCPU), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(KubeReservedMemoryMiB(maxPods)*1024*1024, resource.BinarySI),
	}
	if err := overrideList(reserved, b.KubeReserved, "kubeReserved"); err != nil {
		return NodeSpec{}, err
	}
	system := corev1.ResourceList{}
	if err := overrideList(system, b.SystemReserved, "systemReserved"); err != nil {
		return NodeSpec{}, err
	}
	allocatable := capacity.DeepCopy()
	for _, rl := range []corev1.ResourceList{reserved, system} {
		for name, q := range rl {
			if c, ok := allocatable[name]; ok {
				c.Sub(q)
				allocatable[name] = c
			}
		}
	}
	// Eviction thresholds: memory.available (absolute) and nodefs.available (percent of ephemeral storage).
	evMem := resource.MustParse("100Mi")
	evFS := "10%"
	if v, ok := b.EvictionHard["memory.available"]; ok {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return NodeSpec{}, fmt.Errorf("evictionHard memory.available %q: %w", v, err)
		}
		evMem = q
	}
	if v, ok := b.EvictionHard["nodefs.available"]; ok {
		evFS = v
	}
	mem := allocatable[corev1.ResourceMemory]
	mem.Sub(evMem)
	allocatable[corev1.ResourceMemory] = mem
	eph := allocatable[corev1.ResourceEphemeralStorage]
	var pct float64
	if _, err := fmt.Sscanf(evFS, "%g%%", &pct); err == nil {
		total := capacity[corev1.ResourceEphemeralStorage]
		eph.Sub(*resource.NewQuantity(int64(float64(total.Value())*pct/100), resource.BinarySI))
	} else if q, err := resource.ParseQuantity(evFS); err == nil {
		eph.Sub(q)
	}
	allocatable[corev1.ResourceEphemeralStorage] = eph
	for name, q := range allocatable {
		if q.Sign() < 0 {
			allocatable[name] = *resource.NewQuantity(0, q.Format)
		}
	}
	var slices []resourcev1.ResourceSlice
	if s.opts.Devices != nil {
		slices = s.opts.Devices.Slices(i.Type, i.PrivateDNS)
	}
	return NodeSpec{
		Name:        i.PrivateDNS,
		BootID:      bootID(i.ID, i.reboots),
		ProviderID:  fmt.Sprintf("aws:///%s/%s", i.Zone, i.ID),
		InstanceID:  i.ID,
		Labels:      labels,
		Annotations: map[string]string{KwokNodeAnnotation: "fake", "awssim.dovetail.dev/kubelet-version": "v" + s.k8sVersion + ".0"},
		Taints:      taints,
		Capacity:    capacity,
		Allocatable: allocatable,
		// In an IPv6 cluster the IPv6 address comes first: the kubelet's node IP.
		Addresses:      nodeAddresses(i),
		ResourceSlices: slices,
	}, nil
}

func overrideList(dst corev1.ResourceList, src map[string]string, what string) error {
	for k, v := range src {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("%s %s=%q: %w", what, k, v, err)
		}
		dst[corev1.ResourceName(k)] = q
	}
	return nil
}
