package v1

import (
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// AWS well-known label keys, set on nodes and usable in requirements.
const (
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelInstanceTenancy                      = Group + "/instance-tenancy"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible     = Group + "/capacity-reservation-interruptible"
	// LabelNitroSandbox is "true" for instance types that support Nitro Enclaves, else "false".
	LabelNitroSandbox = Group + "/nitro-sandbox"
	// LabelPlacementGroupID is the id of the placement group a node was launched into.
	LabelPlacementGroupID = Group + "/placement-group-id"
	// LabelPlacementGroupPartition is the partition number of a node in a partition placement group.
	LabelPlacementGroupPartition = Group + "/placement-group-partition"
	// LabelTopologyZoneID is the zone id (e.g. usw2-az1) of a node.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
	// LabelNodeClass names the EC2NodeClass a node was launched with.
	LabelNodeClass = Group + "/ec2nodeclass"
)

// LabelDomain is the AWS label domain; its keys are restricted except for WellKnownLabels.
const LabelDomain = Group

// AWSWellKnownLabels returns only the AWS-specific well-known label keys.
func AWSWellKnownLabels() sets.Set[string] {
	return sets.New(
		LabelInstanceHypervisor,
		LabelInstanceEncryptionInTransitSupported,
		LabelInstanceCategory,
		LabelInstanceFamily,
		LabelInstanceGeneration,
		LabelInstanceLocalNVME,
		LabelInstanceSize,
		LabelInstanceCPU,
		LabelInstanceCPUManufacturer,
		LabelInstanceCPUSustainedClockSpeedMhz,
		LabelInstanceMemory,
		LabelInstanceEBSBandwidth,
		LabelInstanceNetworkBandwidth,
		LabelInstanceGPUName,
		LabelInstanceGPUManufacturer,
		LabelInstanceGPUCount,
		LabelInstanceGPUMemory,
		LabelInstanceAcceleratorName,
		LabelInstanceAcceleratorManufacturer,
		LabelInstanceAcceleratorCount,
		LabelInstanceCapabilityFlex,
		LabelInstanceTenancy,
		LabelCapacityReservationID,
		LabelCapacityReservationType,
		LabelCapacityReservationInterruptible,
		LabelNitroSandbox,
		LabelPlacementGroupID,
		LabelPlacementGroupPartition,
		LabelTopologyZoneID,
		LabelNodeClass,
	)
}

// WellKnownLabels returns every label key usable in requirements on AWS: the provider-independent ones
// plus the AWS ones.
func WellKnownLabels() sets.Set[string] {
	return karpv1.WellKnownLabels().Union(AWSWellKnownLabels())
}

// LabelPolicy returns the label policy the CRDs enforce on AWS: karpenter.k8s.aws is an additional
// restricted domain and the AWS well-known keys are allowed.
func LabelPolicy() karpv1.LabelPolicy {
	p := karpv1.DefaultLabelPolicy()
	p.WellKnown = WellKnownLabels()
	p.RestrictedDomains = append(p.RestrictedDomains, LabelDomain)
	return p
}

// IsRestrictedLabel returns an error if key may not be used in a NodePool requirement or template label on
// AWS (the rule the NodePool CRD enforces).
func IsRestrictedLabel(key string) error {
	return LabelPolicy().ValidateNodePoolRequirementKey(key)
}
