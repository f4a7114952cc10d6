package aws

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// RepairPolicies are the node conditions after which the AWS provider asks for an unhealthy node to be repaired,
// with the tolerations Karpenter's AWS provider uses: the kubelet's Ready condition False or Unknown for 30
// minutes, and the conditions the EKS node monitoring agent writes (accelerated hardware after 10 minutes, the
// others after 30). Repaired as a disruption method, a node's drain is bounded by 10 minutes (5 for accelerated
// hardware), as in Karpenter v1.15's AWS provider.
func RepairPolicies() []cloudprovider.RepairPolicy {
	const (
		short = 10 * time.Minute
		long  = 30 * time.Minute
	)
	drain, gpuDrain := 10*time.Minute, 5*time.Minute
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: short, TerminationGracePeriod: &gpuDrain},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long, TerminationGracePeriod: &drain},
	}
}

// RepairPolicies implements cloudprovider.CloudProvider.
func (p *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy { return RepairPolicies() }
