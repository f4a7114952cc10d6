package lifecycle

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// InstanceTagger is implemented by cloud providers that can tag an instance once its node is known (the AWS
// provider: Name=<node name>).
type InstanceTagger interface {
	TagInstance(ctx context.Context, instanceID string, tags map[string]string) error
}

// NodeClaimTagKey names the NodeClaim on its instance.
const NodeClaimTagKey = karpv1.Group + "/nodeclaim"

// taggerOf finds an InstanceTagger behind the (possibly instrumented) cloud provider.
func taggerOf(cp cloudprovider.CloudProvider) InstanceTagger {
	t, _ := cloudprovider.Find[InstanceTagger](cp)
	return t
}

// tag names the instance after its node once the NodeClaim registered, and records it with the
// karpenter.k8s.aws/tagged annotation so it happens once.
func (c *Controller) tag(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	tagger := taggerOf(c.deps.CloudProvider)
	if tagger == nil || nc.Status.NodeName == "" || nc.Annotations[awsv1.AnnotationInstanceTagged] == "true" {
		return reconcile.Result{}, false, nil
	}
	id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
	err := tagger.TagInstance(ctx, id, map[string]string{"Name": nc.Status.NodeName, NodeClaimTagKey: nc.Name})
	if err != nil && !cloudprovider.IsNotFound(err) {
		return reconcile.Result{}, true, fmt.Errorf("tagging instance %s: %w", id, err)
	}
	// A merge patch of one annotation key needs no lock: with one, the write failed whenever the NodeClaim had
	// been written since the cache read it (its registration, a moment before), about once per node launched.
	patch := client.MergeFrom(nc.DeepCopy())
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[awsv1.AnnotationInstanceTagged] = "true"
	if err := c.deps.Client.Patch(ctx, nc, patch); err != nil {
		return reconcile.Result{}, true, client.IgnoreNotFound(fmt.Errorf("recording instance tags: %w", err))
	}
	c.written.Wrote(nc)
	log.FromContext(ctx).V(1).Info("tagged instance", "nodeclaim", nc.Name, "instance-id", id, "node", nc.Status.NodeName)
	return reconcile.Result{}, false, nil
}
