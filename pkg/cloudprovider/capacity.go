package cloudprovider

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// CapacityLearner is implemented by cloud providers that learn instance types' real capacity from the nodes that
// register (the AWS provider learns memory per instance type and AMI set). Node is registered and nodeClaim is
// its NodeClaim.
type CapacityLearner interface {
	LearnNodeCapacity(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim) error
}
