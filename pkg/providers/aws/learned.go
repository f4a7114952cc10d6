package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

var _ cloudprovider.CapacityLearner = (*CloudProvider)(nil)

// LearnNodeCapacity records the memory capacity a registered node reports for its instance type and its
// EC2NodeClass's current AMI set, so that later launches of that type with those AMIs plan with it instead of
// the VM_MEMORY_OVERHEAD_PERCENT estimate. A node launched from an AMI the node class no longer selects for its
// instance type teaches nothing; nor does a node of an EC2NodeClass that is gone.
func (p *CloudProvider) LearnNodeCapacity(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim) error {
	instanceType := node.Labels[corev1.LabelInstanceTypeStable]
	memory, ok := node.Status.Capacity[corev1.ResourceMemory]
	if instanceType == "" || !ok || memory.Sign() <= 0 {
		return nil
	}
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		if cloudprovider.IsNodeClassNotReady(err) {
			return nil
		}
		return err
	}
	if ami, ok := amiFor(nc.Status.AMIs, node.Labels); !ok || ami != nodeClaim.Status.ImageID {
		return nil
	}
	key := AMIKey(nc.Status.AMIs)
	if p.instanceTypes.LearnedMemory().Observe(instanceType, key, memory) {
		log.FromContext(ctx).V(1).Info("learned memory capacity", "instance-type", instanceType, "memory-capacity", memory.String(),
			"ec2nodeclass", nc.Name, "image-id", nodeClaim.Status.ImageID)
	}
	return nil
}

// AMIKey identifies an EC2NodeClass's AMI set (its status.amis, in any order): memory is learned per instance type
// and AMI set, so that a new AMI starts from the estimate again.
func AMIKey(amis []awsv1.AMI) string {
	if len(amis) == 0 {
		return ""
	}
	parts := make([]string, 0, len(amis))
	for _, a := range amis {
		reqs, _ := json.Marshal(a.Requirements)
		parts = append(parts, a.ID+"\x00"+string(reqs))
	}
	slices.Sort(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x01")))
	return hex.EncodeToString(sum[:8])
}
