package explain

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/operator/index"
	awsprovider "github.com/dovetail/dovetail/pkg/providers/aws"
)

// instanceTypes is a cloud provider that only knows each NodePool's instance types (from the built-in catalog, an
// --instance-types file or AWS): all the disruption controller's snapshot asks of its cloud provider. explain
// launches and deletes nothing, so every other method fails.
type instanceTypes map[string][]*cloudprovider.InstanceType

var _ cloudprovider.CloudProvider = instanceTypes(nil)

var errReadOnly = errors.New("dovetailctl explain reads the cluster and changes nothing")

// GetInstanceTypes returns the NodePool's instance types, or a NodeClassNotReadyError when there are none (an
// EC2NodeClass that is not ready with --from-aws): the controller then leaves the NodePool out too.
func (t instanceTypes) GetInstanceTypes(_ context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	its, ok := t[np.Name]
	if !ok {
		return nil, &cloudprovider.NodeClassNotReadyError{Err: fmt.Errorf("no instance types for NodePool %s", np.Name)}
	}
	return its, nil
}

func (instanceTypes) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return nil, errReadOnly
}
func (instanceTypes) Delete(context.Context, *karpv1.NodeClaim) error { return errReadOnly }
func (instanceTypes) Get(context.Context, string) (*karpv1.NodeClaim, error) {
	return nil, errReadOnly
}
func (instanceTypes) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, errReadOnly }
func (instanceTypes) IsDrifted(context.Context, *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", errReadOnly
}
func (instanceTypes) Name() string { return "dovetailctl" }

// RepairPolicies are the AWS provider's: explain reports when the controller would repair a node.
func (instanceTypes) RepairPolicies() []cloudprovider.RepairPolicy {
	return awsprovider.RepairPolicies(false)
}

// podsByNode serves the lists of pods by spec.nodeName that the controller's snapshot makes once per NodeClaim
// (from its cache's index) out of the pods explain has already listed, instead of one API request each. Every
// other call goes to the cluster.
type podsByNode struct {
	client.Client
	pods map[string][]corev1.Pod
}

func newPodsByNode(c client.Client, pods []*corev1.Pod) *podsByNode {
	out := &podsByNode{Client: c, pods: map[string][]corev1.Pod{}}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			out.pods[p.Spec.NodeName] = append(out.pods[p.Spec.NodeName], *p)
		}
	}
	return out
}

// List implements client.Reader.
func (c *podsByNode) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if pl, ok := list.(*corev1.PodList); ok && lo.FieldSelector != nil && lo.LabelSelector == nil && lo.Namespace == "" {
		if node, found := lo.FieldSelector.RequiresExactMatch(index.PodNodeName); found && len(lo.FieldSelector.Requirements()) == 1 {
			pl.Items = append([]corev1.Pod(nil), c.pods[node]...)
			return nil
		}
	}
	return c.Client.List(ctx, list, opts...)
}
