package cloudprovider

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Capacity types, the values of the karpenter.sh/capacity-type label.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// InstanceType is one kind of machine the cloud can launch, with what a Node of that kind offers and where and at
// what price it can be had. Values are immutable once handed out: callers must not modify them.
type InstanceType struct {
	// Name is the cloud's name for the type, e.g. "m5.large".
	Name string
	// Requirements are the well-known labels a Node of this type carries, each with the single value it has
	// (e.g. kubernetes.io/arch=amd64, karpenter.k8s.aws/instance-family=m5). Zone and capacity type are not
	// here: they vary by offering.
	Labels map[string]string
	// Capacity is what the Node reports as capacity: cpu, memory (after VM overhead), pods, ephemeral-storage and
	// extended resources such as nvidia.com/gpu.
	Capacity corev1.ResourceList
	// Overhead is what the kubelet and the system hold back from Capacity (kube-reserved, system-reserved and
	// eviction thresholds); Allocatable = Capacity - Overhead.
	Overhead Overhead
	// Offerings are the (zone, capacity type) pairs the type is sold in, with prices and availability.
	Offerings []Offering
	// CapacityOverlays names, for each resource a NodeOverlay added to Capacity, the overlay that added it
	// (nil when no overlay applies).
	CapacityOverlays map[corev1.ResourceName]string
	// VolumeLimits are how many volumes of each CSI driver a new node of this type can attach (what its CSINode
	// will report as allocatable), used until the node has a CSINode; drivers absent are not limited.
	VolumeLimits map[string]int
	// LaunchLabels are labels the provider chooses at launch from the NodeClaim's requirements rather than
	// properties of the type (on AWS: the instance tenancy, the placement group partition), each with the values
	// it can choose. A pod's requirement on such a key is met by a type offering a value it allows, whether or
	// not the NodePool names the key (Karpenter's undefined well-known labels); the NodeClaim carries the
	// requirement to the launch. The map may be shared between types: read only.
	LaunchLabels map[string][]string
}

// Overhead is the capacity a Node holds back from pods.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Total returns the sum of all overhead components.
func (o Overhead) Total() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for name, q := range l {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// Allocatable returns Capacity minus Overhead, never negative.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	total := it.Overhead.Total()
	for name, q := range it.Capacity {
		a := q.DeepCopy()
		if o, ok := total[name]; ok {
			a.Sub(o)
		}
		if a.Sign() < 0 {
			a = resource.Quantity{Format: q.Format}
		}
		out[name] = a
	}
	return out
}

// Offering is an instance type sold in one zone with one capacity type.
type Offering struct {
	Zone         string
	CapacityType string
	// Price is the hourly price in US dollars.
	Price float64
	// Available is false when the cloud has recently said it has no capacity for this offering.
	Available bool
	// ReservationID is set for capacity-type "reserved" offerings.
	ReservationID string
	// ReservationType is the reservation's type for reserved offerings: default (an On-Demand Capacity
	// Reservation) or capacity-block.
	ReservationType string
	// Interruptible is true for a reserved offering whose capacity the cloud may reclaim.
	Interruptible bool
	// ReservationCapacity is how many more instances the reservation takes (reserved offerings only).
	ReservationCapacity int
	// PriceOverlay names the NodeOverlay that set Price ("" when Price is the cloud's); CloudPrice is then the
	// cloud's price before the overlay.
	PriceOverlay string
	CloudPrice   float64
}
