package aws

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// RepairPolicies are the node conditions after which the AWS provider asks for an unhealthy node to be repaired,
// with the tolerations Karpenter's AWS provider uses: the kubelet's Ready condition False or Unknown for 30
// minutes, and the conditions the EKS node monitoring agent writes (accelerated hardware after 10 minutes, the
// others after 30).
func RepairPolicies() []cloudprovider.RepairPolicy {
	const (
		short = 10 * time.Minute
		long  = 30 * time.Minute
	)
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: long},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: long},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: short},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: long},
	}
}

// RepairPolicies implements cloudprovider.CloudProvider.
func (p *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy { return RepairPolicies() }
