package aws

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/settings"
)

// GPU fault families of AcceleratedHardwareReady=False, told apart by the NVIDIA XID code the EKS node monitoring
// agent puts in the condition's reason (Karpenter v1.15's AWS provider's lists): faults a reboot clears, and
// fatal ones a reboot would only delay.
const (
	RebootableXIDPattern = `XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158)`
	FatalXIDPattern      = `XID(64|74|79|119|120)`
)

// RepairPolicies are the node conditions after which the AWS provider asks for an unhealthy node to be repaired,
// with Karpenter v1.15's AWS provider's tolerations and drain bounds: the kubelet's Ready condition False or
// Unknown for 30 minutes; AcceleratedHardwareReady=False after 10 minutes for a known GPU fault (XID code in the
// reason; drain bound 5 minutes), 30 for another; the other node monitoring agent conditions after 30 minutes
// (drain bound 10 minutes). With reboot true (the AWS gate RebootForRepair), the GPU faults a reboot clears
// reboot the node in place instead of replacing it.
func RepairPolicies(reboot bool) []cloudprovider.RepairPolicy {
	const (
		short = 10 * time.Minute
		long  = 30 * time.Minute
	)
	drain, gpuDrain := 10*time.Minute, 5*time.Minute
	rebootable := cloudprovider.RepairReplace
	if reboot {
		rebootable = cloudprovider.RepairReboot
	}
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, Reason: RebootableXIDPattern, TolerationDuration: short,
			TerminationGracePeriod: &gpuDrain, Action: rebootable},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, Reason: FatalXIDPattern, TolerationDuration: short,
			TerminationGracePeriod: &gpuDrain},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
	}
}

// RepairPolicies implements cloudprovider.CloudProvider.
func (p *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return RepairPolicies(p.settings != nil && p.settings.AWSFeatureEnabled(settings.AWSFeatureRebootForRepair))
}
