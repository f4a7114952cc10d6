package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// launch creates the instance once and records it in the NodeClaim.
func (c *Controller) launch(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	if nc.IsTrue(karpv1.ConditionTypeLaunched) {
		return reconcile.Result{}, false, nil
	}
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "nodepool", nc.NodePoolName())
	stored := nc.DeepCopy()
	if nc.Status.ProviderID != "" {
		// Launched before but the condition was lost: do not launch twice.
		nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
		return reconcile.Result{}, false, c.patchStatus(ctx, stored, nc)
	}
	created, err := c.deps.CloudProvider.Create(ctx, nc)
	switch {
	case err == nil:
	case cloudprovider.IsInsufficientCapacity(err):
		logger.Info("no capacity for nodeclaim, deleting it so provisioning retries", "error", err.Error())
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, "InsufficientCapacityError", "NodeClaim %s could not launch: %v", nc.Name, err)
		nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonInsufficientCapacity, err.Error())
		if perr := c.patchStatus(ctx, stored, nc); perr != nil {
			deps.LogError(log.IntoContext(ctx, logger), perr, "recording launch failure")
		}
		return reconcile.Result{}, true, c.deleteNodeClaim(ctx, nc)
	case cloudprovider.IsThrottled(err):
		// Not a launch failure: the SDK retried with backoff, and the reconcile is retried later (RetryTransient).
		return reconcile.Result{}, true, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
	case cloudprovider.IsNodeClassNotReady(err):
		nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonNodeClassNotReady, err.Error())
		return reconcile.Result{RequeueAfter: nodeClassRequeue}, true, c.patchStatus(ctx, stored, nc)
	default:
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, "LaunchFailed", "NodeClaim %s could not launch: %v", nc.Name, err)
		nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunchFailed, err.Error())
		if perr := c.patchStatus(ctx, stored, nc); perr != nil {
			deps.LogError(log.IntoContext(ctx, logger), perr, "recording launch failure")
		}
		return reconcile.Result{}, true, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
	}

	// Labels the cloud chose (instance type, zone, capacity type, ...) go on the NodeClaim's metadata first,
	// so that they are on it before it is marked Launched.
	meta := nc.DeepCopy()
	changed := false
	for k, v := range created.Labels {
		if nc.Labels == nil {
			nc.Labels = map[string]string{}
		}
		if nc.Labels[k] != v {
			nc.Labels[k] = v
			changed = true
		}
	}
	for k, v := range created.Annotations {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		if nc.Annotations[k] != v {
			nc.Annotations[k] = v
			changed = true
		}
	}
	if changed {
		if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(meta, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, true, client.IgnoreNotFound(fmt.Errorf("recording launched labels: %w", err))
		}
	}
	stored = nc.DeepCopy()
	stored.Status = *meta.Status.DeepCopy()
	nc.Status.ProviderID = created.Status.ProviderID
	nc.Status.ImageID = created.Status.ImageID
	nc.Status.Capacity = created.Status.Capacity
	nc.Status.Allocatable = created.Status.Allocatable
	nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
	if err := c.patchStatus(ctx, stored, nc); err != nil {
		return reconcile.Result{}, true, err
	}
	c.deps.Metrics.NodeClaimLaunchDuration.WithLabelValues(nc.NodePoolName()).Observe(c.since(nc).Seconds())
	logger.Info("launched nodeclaim", "provider-id", nc.Status.ProviderID,
		"instance-type", nc.Labels[corev1.LabelInstanceTypeStable], "zone", nc.Labels[corev1.LabelTopologyZone],
		"capacity-type", nc.Labels[karpv1.CapacityTypeLabelKey])
	return reconcile.Result{}, false, nil
}

// equalStatus compares statuses ignoring condition timestamps set by SetStatusCondition.
func equalStatus(a, b *karpv1.NodeClaim) bool {
	sa, sb := a.Status.DeepCopy(), b.Status.DeepCopy()
	for _, s := range []*karpv1.NodeClaimStatus{sa, sb} {
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	return equality.Semantic.DeepEqual(sa, sb)
}
