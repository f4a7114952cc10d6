package instancetype

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/kubeletcel"
)

// Info is a provider-neutral description of an EC2 instance type: what DescribeInstanceTypes reports, reduced to
// the figures that decide labels and capacity. pkg/catalog data converts to it as easily as EC2 answers do.
type Info struct {
	Name string
	// Architectures uses EC2 names: x86_64, arm64, i386, x86_64_mac, arm64_mac.
	Architectures   []string
	VCPU            int64
	MemoryMiB       int64
	CPUManufacturer string
	ClockSpeedGHz   float64
	GPUs            []Device
	// Accelerators are AWS Inferentia/Trainium (Neuron) devices.
	Accelerators         []Device
	LocalStorageGB       int64
	LocalNVMe            bool
	MaxENIs              int
	IPv4PerENI           int
	NetworkBandwidthMbps int64
	EBSBandwidthMbps     int64
	Hypervisor           string
	BareMetal            bool
	EncryptionInTransit  bool
	// NitroEnclaves is true when the type supports Nitro Enclaves (the karpenter.k8s.aws/nitro-sandbox label).
	NitroEnclaves bool
	// MaxEFAInterfaces is how many Elastic Fabric Adapters the type takes (0: no EFA).
	MaxEFAInterfaces int
	// BranchENIs is how many branch network interfaces (security groups for pods) a trunking-compatible type
	// offers; 0 for the others.
	BranchENIs int
	// NetworkCards holds, for each network card by index, how many network interfaces it takes; empty means one
	// card taking MaxENIs.
	NetworkCards []int `json:",omitempty"`
	// PlacementStrategies are the placement group strategies the type launches in (cluster, partition, spread);
	// nil means unknown, and every strategy is assumed.
	PlacementStrategies []string `json:",omitempty"`
	// NestedVirtualization is true when the type supports nested virtualization (cpuOptions.nestedVirtualization).
	NestedVirtualization bool `json:",omitempty"`
}

// Device is a GPU or accelerator model on an instance type; MemoryMiB and Cores (NeuronCores of AWS Neuron
// devices) are per device.
type Device struct {
	Name         string
	Manufacturer string
	Count        int64
	MemoryMiB    int64
	Cores        int64
}

// Kubelet holds the kubelet settings of an EC2NodeClass that change what a node offers. With CEL set (the
// NodeClassCEL gate on), MaxPodsExpr and the KubeReserved and SystemReserved values that are not quantities are
// CEL expressions evaluated per instance type (pkg/kubeletcel).
type Kubelet struct {
	MaxPods        *int32
	MaxPodsExpr    string `json:",omitempty"`
	PodsPerCore    *int32
	KubeReserved   map[string]string
	SystemReserved map[string]string
	EvictionHard   map[string]string
	CEL            *kubeletcel.Env `json:"-"`
}

// KubeletOf returns the kubelet settings that change what a node offers. Without env (the NodeClassCEL gate
// off) CEL expressions are left out: a node class holding one is not ready (ValidateNodeClass), so no node is
// sized with it.
func KubeletOf(kc awsv1.KubeletConfiguration, env *kubeletcel.Env) Kubelet {
	k, err := kc.Parse()
	if err != nil {
		return Kubelet{}
	}
	maxPods, _ := k.MaxPodsValue()
	out := Kubelet{
		MaxPods: maxPods, PodsPerCore: k.PodsPerCore,
		KubeReserved: awsv1.StaticReserved(k.KubeReserved), SystemReserved: awsv1.StaticReserved(k.SystemReserved),
		EvictionHard: k.EvictionHard,
	}
	if env != nil && k.HasExpressions() {
		out.CEL, out.KubeReserved, out.SystemReserved = env, k.KubeReserved, k.SystemReserved
		if k.MaxPods != nil && maxPods == nil {
			out.MaxPodsExpr = k.MaxPods.String()
		}
	}
	return out
}

// Vars are the values of the instance type the kubelet CEL expressions read; maxPods is the max_pods variable.
func (info Info) Vars(maxPods int64) kubeletcel.Vars {
	return kubeletcel.Vars{VCPUs: info.VCPU, MemoryMiB: info.MemoryMiB, DefaultENIs: int64(info.MaxENIs),
		IPsPerENI: int64(info.IPv4PerENI), MaxPods: maxPods, InstanceType: info.Name}
}

// resolveKubelet evaluates the CEL expressions of kubelet for info: maxPods first (max_pods is then the pod count
// without it), then the reserved values (max_pods the resulting pod count). A failing expression, or a maxPods
// outside [0, 2^31-1] or a negative reservation, is an error naming it.
func resolveKubelet(info Info, kubelet Kubelet, reservedENIs int) (Kubelet, error) {
	if kubelet.CEL == nil {
		return kubelet, nil
	}
	out := kubelet
	if kubelet.MaxPodsExpr != "" {
		base := kubelet
		base.MaxPods, base.MaxPodsExpr = nil, ""
		n, err := kubelet.CEL.Eval(kubelet.MaxPodsExpr, info.Vars(MaxPods(info, base, reservedENIs)))
		if err != nil {
			return Kubelet{}, fmt.Errorf("spec.kubelet.maxPods: %w", err)
		}
		if n < 0 || n > math.MaxInt32 {
			return Kubelet{}, fmt.Errorf("spec.kubelet.maxPods: expression %q on %s gives %d, outside [0, %d]", kubelet.MaxPodsExpr, info.Name, n, math.MaxInt32)
		}
		v := int32(n)
		out.MaxPods, out.MaxPodsExpr = &v, ""
	}
	vars := info.Vars(MaxPods(info, out, reservedENIs))
	for _, f := range []struct {
		name string
		m    *map[string]string
	}{{"kubeReserved", &out.KubeReserved}, {"systemReserved", &out.SystemReserved}} {
		if len(*f.m) == 0 {
			continue
		}
		resolved := make(map[string]string, len(*f.m))
		for key, v := range *f.m {
			if _, err := resource.ParseQuantity(v); err == nil {
				resolved[key] = v
				continue
			}
			n, err := kubelet.CEL.Eval(v, vars)
			if err != nil {
				return Kubelet{}, fmt.Errorf("spec.kubelet.%s[%s]: %w", f.name, key, err)
			}
			if n < 0 {
				return Kubelet{}, fmt.Errorf("spec.kubelet.%s[%s]: expression %q on %s gives %d, a negative reservation", f.name, key, v, info.Name, n)
			}
			resolved[key] = kubeletcel.Reserved(key, n)
		}
		*f.m = resolved
	}
	return out, nil
}

// ResolveKubelet evaluates the CEL expressions of kubelet for info (see resolveKubelet); for checking them
// against every instance type before anything launches.
func ResolveKubelet(info Info, kubelet Kubelet, reservedENIs int) error {
	_, err := resolveKubelet(info, kubelet, reservedENIs)
	return err
}

// Settings are the operator- and node-class-wide inputs of the arithmetic.
type Settings struct {
	// VMMemoryOverheadPercent is the share of memory the hypervisor and OS keep (0.075 by default).
	VMMemoryOverheadPercent float64
	// ReservedENIs is the number of ENIs left out of the max-pods formula.
	ReservedENIs int
	// EphemeralStorage is the size of the volume pods' ephemeral storage lives on; zero means 20Gi.
	EphemeralStorage resource.Quantity
	// InstanceStoreRAID0 (instanceStorePolicy: RAID0): types with instance store offer its total size as
	// ephemeral storage instead of EphemeralStorage.
	InstanceStoreRAID0 bool
	// OS is the kubernetes.io/os value; empty means linux.
	OS string
	// WindowsBuild is the node.kubernetes.io/windows-build value of Windows nodes; empty for Linux.
	WindowsBuild string
	// NetworkInterfaces are the node class's spec.networkInterfaces. When set they decide the EFA count (one per
	// efa-only interface) and their efa-only interfaces on card 0 leave the pod-IP formula.
	NetworkInterfaces []awsv1.NetworkInterface `json:",omitempty"`
}

// Shape is what a node of an instance type offers: its labels, capacity and the overhead held back from pods.
type Shape struct {
	Labels   map[string]string
	Capacity corev1.ResourceList
	Overhead cloudprovider.Overhead
}

// Extended resource names reported by device plugins and the VPC resource controller on AWS nodes.
const (
	ResourceNvidiaGPU  corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU     corev1.ResourceName = "amd.com/gpu"
	ResourceNeuron     corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceGaudi      corev1.ResourceName = "habana.ai/gaudi"
	ResourceEFA        corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourcePodENI     corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	// ResourcePrivateIPv4Address is the secondary IPv4 addresses a Windows node gives pods.
	ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"
)

// DefaultEphemeralStorage is the root volume size used when the node class does not set one.
var defaultEphemeralStorage = resource.MustParse("20Gi")

// DefaultEphemeralStorage returns the root volume size assumed when the node class does not set one (20Gi).
func DefaultEphemeralStorage() resource.Quantity { return defaultEphemeralStorage.DeepCopy() }

// familyPattern splits a family into category and generation; high-memory "u-6tb1" is category u, generation 1.
var familyPattern = regexp.MustCompile(`^([a-z]+)(?:-[0-9]+tb)?([0-9]+)`)

// Compute returns the labels, capacity and overhead of a node of the given instance type. It is pure: the same
// inputs give the same Shape, and it reads no clock, cache or network.
func Compute(info Info, kubelet Kubelet, s Settings) (Shape, error) {
	if info.Name == "" {
		return Shape{}, fmt.Errorf("instance type without a name")
	}
	if info.VCPU <= 0 || info.MemoryMiB <= 0 {
		return Shape{}, fmt.Errorf("instance type %s: vcpu %d and memory %d MiB must be positive", info.Name, info.VCPU, info.MemoryMiB)
	}
	if s.VMMemoryOverheadPercent < 0 || s.VMMemoryOverheadPercent >= 1 {
		return Shape{}, fmt.Errorf("VM memory overhead %v must be in [0, 1)", s.VMMemoryOverheadPercent)
	}
	storage := s.EphemeralStorage
	if storage.IsZero() {
		storage = defaultEphemeralStorage
	}
	if s.InstanceStoreRAID0 && info.LocalStorageGB > 0 {
		// The disks' total as EC2 states it, in decimal gigabytes, as Karpenter counts it.
		storage = *resource.NewScaledQuantity(info.LocalStorageGB, resource.Giga)
	}
	kubelet, err := resolveKubelet(info, kubelet, s.ReservedENIs)
	if err != nil {
		return Shape{}, err
	}
	pods := MaxPods(info, kubelet, s.ReservedENIs+efaOnlyOnPrimaryCard(s.NetworkInterfaces))
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(info.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           memoryCapacity(info.MemoryMiB, s.VMMemoryOverheadPercent),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: storage.DeepCopy(),
	}
	for _, g := range info.GPUs {
		switch strings.ToLower(g.Manufacturer) {
		case "nvidia":
			add(capacity, ResourceNvidiaGPU, g.Count)
		case "amd":
			add(capacity, ResourceAMDGPU, g.Count)
		case "habana":
			add(capacity, ResourceGaudi, g.Count)
		}
	}
	for _, a := range info.Accelerators {
		if strings.EqualFold(a.Manufacturer, "aws") {
			add(capacity, ResourceNeuron, a.Count)
			if a.Cores > 0 {
				add(capacity, ResourceNeuronCore, a.Count*a.Cores)
			}
		}
	}
	if n := EFACount(info, s.NetworkInterfaces); n > 0 {
		add(capacity, ResourceEFA, int64(n))
	}
	if info.BranchENIs > 0 {
		add(capacity, ResourcePodENI, int64(info.BranchENIs))
	}
	if s.OS == string(corev1.Windows) && info.IPv4PerENI > 1 {
		// Windows pods take the primary interface's secondary addresses, handed out by the VPC resource controller.
		add(capacity, ResourcePrivateIPv4Address, int64(info.IPv4PerENI-1))
	}
	kubeReserved, err := overlay(KubeReserved(info.VCPU, pods), kubelet.KubeReserved)
	if err != nil {
		return Shape{}, fmt.Errorf("instance type %s: kubeReserved: %w", info.Name, err)
	}
	systemReserved, err := overlay(corev1.ResourceList{}, kubelet.SystemReserved)
	if err != nil {
		return Shape{}, fmt.Errorf("instance type %s: systemReserved: %w", info.Name, err)
	}
	eviction, err := EvictionThreshold(capacity, kubelet.EvictionHard)
	if err != nil {
		return Shape{}, fmt.Errorf("instance type %s: evictionHard: %w", info.Name, err)
	}
	return Shape{
		Labels:   withWindowsBuild(Labels(info, s.OS), s.WindowsBuild),
		Capacity: capacity,
		Overhead: cloudprovider.Overhead{
			KubeReserved:      kubeReserved,
			SystemReserved:    systemReserved,
			EvictionThreshold: eviction,
		},
	}, nil
}

// EFACount is the vpc.amazonaws.com/efa capacity of a node: the efa-only interfaces of spec.networkInterfaces when
// the node class sets them, otherwise every EFA interface the type takes.
func EFACount(info Info, nis []awsv1.NetworkInterface) int {
	if len(nis) == 0 {
		return info.MaxEFAInterfaces
	}
	n := 0
	for _, ni := range nis {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n++
		}
	}
	return n
}

// efaOnlyOnPrimaryCard counts the efa-only interfaces on network card 0: each takes an interface the VPC CNI would
// otherwise give pod addresses from.
func efaOnlyOnPrimaryCard(nis []awsv1.NetworkInterface) int {
	n := 0
	for _, ni := range nis {
		if ni.NetworkCardIndex == 0 && ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n++
		}
	}
	return n
}

func add(l corev1.ResourceList, name corev1.ResourceName, n int64) {
	q := l[name]
	q.Add(*resource.NewQuantity(n, resource.DecimalSI))
	l[name] = q
}

func memoryCapacity(mib int64, overhead float64) resource.Quantity {
	kept := mib - int64(math.Ceil(float64(mib)*overhead))
	return *resource.NewQuantity(kept*1024*1024, resource.BinarySI)
}

// MaxPods returns the pod capacity: kubelet maxPods when set, otherwise the ENI formula
// (ENIs − reserved) × (IPv4 per ENI − 1) + 2, then capped by podsPerCore × vCPUs when set.
func MaxPods(info Info, kubelet Kubelet, reservedENIs int) int64 {
	var pods int64
	switch {
	case kubelet.MaxPods != nil:
		pods = int64(*kubelet.MaxPods)
	case info.MaxENIs == 0 || info.IPv4PerENI == 0:
		pods = 110
	default:
		enis := int64(info.MaxENIs - reservedENIs)
		if enis < 0 {
			enis = 0
		}
		pods = enis*int64(info.IPv4PerENI-1) + 2
	}
	if kubelet.PodsPerCore != nil && *kubelet.PodsPerCore > 0 {
		if perCore := int64(*kubelet.PodsPerCore) * info.VCPU; perCore < pods {
			pods = perCore
		}
	}
	return pods
}

// KubeReserved returns the EKS AMI defaults: cpu 6% of the first core, 1% of the second, 0.5% of the third and
// fourth and 0.25% of the rest; memory 11Mi per pod plus 255Mi; ephemeral-storage 1Gi.
func KubeReserved(vcpu, pods int64) corev1.ResourceList {
	var milli float64
	for core := int64(1); core <= vcpu; core++ {
		switch {
		case core == 1:
			milli += 60
		case core == 2:
			milli += 10
		case core <= 4:
			milli += 5
		default:
			milli += 2.5
		}
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(math.Ceil(milli)), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
}

// overlay returns base with the user's values (resource name → quantity) replacing matching keys.
func overlay(base corev1.ResourceList, user map[string]string) (corev1.ResourceList, error) {
	for _, k := range slices.Sorted(maps.Keys(user)) {
		q, err := resource.ParseQuantity(user[k])
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, user[k], err)
		}
		base[corev1.ResourceName(k)] = q
	}
	return base, nil
}

// Eviction signals that map to resources.
const (
	signalMemory = "memory.available"
	signalNodefs = "nodefs.available"
)

// EvictionThreshold returns the memory and ephemeral-storage the kubelet's hard eviction thresholds keep free.
// Defaults are memory.available<100Mi and nodefs.available<10%; user values (absolute or a percentage of
// capacity) replace them per signal.
func EvictionThreshold(capacity corev1.ResourceList, evictionHard map[string]string) (corev1.ResourceList, error) {
	signals := map[string]string{signalMemory: "100Mi", signalNodefs: "10%"}
	for k, v := range evictionHard {
		signals[k] = v
	}
	out := corev1.ResourceList{}
	for signal, res := range map[string]corev1.ResourceName{signalMemory: corev1.ResourceMemory, signalNodefs: corev1.ResourceEphemeralStorage} {
		q, err := threshold(signals[signal], capacity[res])
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", signal, signals[signal], err)
		}
		out[res] = q
	}
	return out, nil
}

func threshold(v string, capacity resource.Quantity) (resource.Quantity, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		pct, err := strconv.ParseFloat(p, 64)
		if err != nil || pct < 0 || pct > 100 {
			return resource.Quantity{}, fmt.Errorf("percentage must be a number in [0, 100]")
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity.Value())*pct/100)), resource.BinarySI), nil
	}
	return resource.ParseQuantity(v)
}

// withWindowsBuild adds the node.kubernetes.io/windows-build label when build is set.
func withWindowsBuild(l map[string]string, build string) map[string]string {
	if build != "" {
		l[corev1.LabelWindowsBuild] = build
	}
	return l
}

// Labels returns the well-known labels a node of this type carries (arch, os, instance type and the
// karpenter.k8s.aws/instance-* family). Zone, region and capacity type are per offering and not included.
func Labels(info Info, os string) map[string]string {
	if os == "" {
		os = "linux"
	}
	l := map[string]string{
		corev1.LabelInstanceTypeStable: info.Name,
		corev1.LabelOSStable:           os,
		awsv1.LabelInstanceCPU:         strconv.FormatInt(info.VCPU, 10),
		awsv1.LabelInstanceMemory:      strconv.FormatInt(info.MemoryMiB, 10),
	}
	if arch := KubeArch(info.Architectures); arch != "" {
		l[corev1.LabelArchStable] = arch
	}
	family, size, _ := strings.Cut(info.Name, ".")
	l[awsv1.LabelInstanceFamily] = family
	// Flex instances (c7i-flex, m7i-flex) are named so by their family, as Karpenter reads it.
	l[awsv1.LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.Contains(family, "-flex"))
	if size != "" {
		l[awsv1.LabelInstanceSize] = size
	}
	if m := familyPattern.FindStringSubmatch(family); m != nil {
		l[awsv1.LabelInstanceCategory] = m[1]
		l[awsv1.LabelInstanceGeneration] = m[2]
	}
	if info.CPUManufacturer != "" {
		l[awsv1.LabelInstanceCPUManufacturer] = strings.ToLower(info.CPUManufacturer)
	}
	if info.ClockSpeedGHz > 0 {
		l[awsv1.LabelInstanceCPUSustainedClockSpeedMhz] = strconv.FormatInt(int64(math.Round(info.ClockSpeedGHz*1000)), 10)
	}
	if info.Hypervisor != "" {
		l[awsv1.LabelInstanceHypervisor] = info.Hypervisor
	} else if info.BareMetal {
		l[awsv1.LabelInstanceHypervisor] = ""
	}
	if info.NetworkBandwidthMbps > 0 {
		l[awsv1.LabelInstanceNetworkBandwidth] = strconv.FormatInt(info.NetworkBandwidthMbps, 10)
	}
	if info.EBSBandwidthMbps > 0 {
		l[awsv1.LabelInstanceEBSBandwidth] = strconv.FormatInt(info.EBSBandwidthMbps, 10)
	}
	l[awsv1.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(info.EncryptionInTransit)
	l[awsv1.LabelNitroSandbox] = strconv.FormatBool(info.NitroEnclaves)
	if info.LocalNVMe && info.LocalStorageGB > 0 {
		l[awsv1.LabelInstanceLocalNVME] = strconv.FormatInt(info.LocalStorageGB, 10)
	}
	deviceLabels(l, info.GPUs, awsv1.LabelInstanceGPUName, awsv1.LabelInstanceGPUManufacturer, awsv1.LabelInstanceGPUCount, awsv1.LabelInstanceGPUMemory)
	deviceLabels(l, info.Accelerators, awsv1.LabelInstanceAcceleratorName, awsv1.LabelInstanceAcceleratorManufacturer, awsv1.LabelInstanceAcceleratorCount, "")
	return l
}

// deviceLabels sets the name, manufacturer and memory of the first device model and the total count; an empty
// memory key leaves memory out.
func deviceLabels(l map[string]string, devices []Device, nameKey, manufacturerKey, countKey, memoryKey string) {
	if len(devices) == 0 {
		return
	}
	var count int64
	for _, d := range devices {
		count += d.Count
	}
	first := devices[0]
	l[nameKey] = labelValue(first.Name)
	l[manufacturerKey] = labelValue(first.Manufacturer)
	l[countKey] = strconv.FormatInt(count, 10)
	if memoryKey != "" && first.MemoryMiB > 0 {
		l[memoryKey] = strconv.FormatInt(first.MemoryMiB, 10)
	}
}

var labelUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// labelValue lower-cases a device name and replaces characters a label value may not hold.
func labelValue(s string) string {
	v := labelUnsafe.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "-")
	return strings.Trim(v, "-._")
}

// KubeArch returns the Kubernetes architecture (amd64, arm64) of the first EC2 architecture Kubernetes knows.
func KubeArch(ec2Archs []string) string {
	for _, a := range ec2Archs {
		switch a {
		case "x86_64":
			return "amd64"
		case "arm64":
			return "arm64"
		}
	}
	return ""
}
