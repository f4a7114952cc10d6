package fake

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// Zones are the zones of the default instance types' offerings.
var Zones = []string{"test-zone-a", "test-zone-b", "test-zone-c"}

// InstanceTypeOptions describe one instance type for NewInstanceType.
type InstanceTypeOptions struct {
	Name   string
	CPU    string
	Memory string
	Pods   string
	Arch   string
	// Extended are extra capacities such as nvidia.com/gpu.
	Extended corev1.ResourceList
	// Price is the on-demand price; spot is 30% of it. Both are offered in every zone of Zones.
	Price float64
	// Labels are added to the type's labels.
	Labels map[string]string
}

// NewInstanceType builds an instance type with on-demand and spot offerings in every zone.
func NewInstanceType(o InstanceTypeOptions) *cloudprovider.InstanceType {
	if o.Pods == "" {
		o.Pods = "110"
	}
	if o.Arch == "" {
		o.Arch = karpv1.ArchitectureAmd64
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(o.CPU),
		corev1.ResourceMemory:           resource.MustParse(o.Memory),
		corev1.ResourcePods:             resource.MustParse(o.Pods),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	for k, v := range o.Extended {
		capacity[k] = v
	}
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: o.Name,
		corev1.LabelArchStable:         o.Arch,
		corev1.LabelOSStable:           karpv1.OSLinux,
	}
	for k, v := range o.Labels {
		labels[k] = v
	}
	var offerings []cloudprovider.Offering
	for _, z := range Zones {
		offerings = append(offerings,
			cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: o.Price, Available: true},
			cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeSpot, Price: o.Price * 0.3, Available: true},
		)
	}
	return &cloudprovider.InstanceType{
		Name:     o.Name,
		Labels:   labels,
		Capacity: capacity,
		Overhead: cloudprovider.Overhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("100Mi"),
			},
		},
		Offerings: offerings,
	}
}

// DefaultInstanceTypes returns small, medium, large and xlarge amd64 types plus an arm64 and a GPU type.
func DefaultInstanceTypes() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for i, size := range []struct{ name, cpu, mem string }{
		{"small", "1", "2Gi"}, {"medium", "2", "4Gi"}, {"large", "4", "8Gi"}, {"xlarge", "8", "16Gi"},
	} {
		out = append(out, NewInstanceType(InstanceTypeOptions{
			Name: "fake-" + size.name, CPU: size.cpu, Memory: size.mem, Price: 0.05 * float64(int(1)<<i),
		}))
	}
	out = append(out,
		NewInstanceType(InstanceTypeOptions{Name: "fake-arm-large", CPU: "4", Memory: "8Gi", Arch: karpv1.ArchitectureArm64, Price: 0.15}),
		NewInstanceType(InstanceTypeOptions{Name: "fake-gpu", CPU: "8", Memory: "32Gi", Price: 1.0,
			Extended: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}),
	)
	return out
}

func offeringKey(instanceType, zone, capacityType string) string {
	return fmt.Sprintf("%s/%s/%s", instanceType, zone, capacityType)
}
