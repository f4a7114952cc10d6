package reboot

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/reboot"
	"github.com/dovetail/dovetail/pkg/termination"
)

// drainedReason is the reason label of karpenter_pods_drained_total for the pods a reboot drains: reboots are
// node repair's.
const drainedReason = "unhealthy"

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.reboot"

// Controller carries out committed reboots. It always runs: a reboot in progress finishes even if the gate is
// turned off meanwhile.
type Controller struct {
	deps deps.Deps
	// issuing is when each NodeClaim's first reboot call was tried, after its drain: the calls may fail for
	// reboot.IssuanceTimeout from then on. A restart forgets it and counts from its first try after the restart.
	mu      sync.Mutex
	issuing map[types.UID]time.Time
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, issuing: map[types.UID]time.Time{}}
}

// Register watches the NodeClaims that carry a Rebooting condition.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			nc, ok := o.(*karpv1.NodeClaim)
			return ok && nc.GetCondition(karpv1.ConditionTypeRebooting) != nil
		}))).
		Complete(deps.RetryTransient(c))
}

// Reconcile moves one reboot on.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond := nc.GetCondition(karpv1.ConditionTypeRebooting)
	if cond == nil || cond.Status != metav1.ConditionTrue || !nc.DeletionTimestamp.IsZero() {
		c.forget(nc.UID)
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "node", nc.Status.NodeName))
	node := &corev1.Node{}
	found := true
	if nc.Status.NodeName == "" {
		found = false
	} else if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting node %s: %w", nc.Status.NodeName, err)
		}
		found = false
	}
	in := InputOf(c.deps.Clock.Now(), nc, node, found)
	if c.deps.Settings != nil {
		in.Window = c.deps.Settings.RebootObservationWindow
	}
	c.mu.Lock()
	in.IssuingSince = c.issuing[nc.UID]
	c.mu.Unlock()
	var plan termination.DrainPlan
	if in.Phase == reboot.Requested && !in.HasPreBootID && found {
		pods, err := c.podsOn(ctx, node.Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		// No deadline: a reboot's drain only evicts; the pods still there when its grace period ends ride the
		// reboot, none is deleted.
		plan = termination.PlanDrain(termination.DrainInput{Now: in.Now, Pods: pods})
		in.PodsLeft = len(plan.Remaining)
	}
	step := reboot.Decide(in)
	if step.BootChanged && found {
		if err := c.untaint(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	switch step.Action {
	case reboot.Drain:
		return c.drain(ctx, node, plan, step)
	case reboot.Issue:
		if step.Message != "" {
			log.FromContext(ctx).Info("drain before reboot ended", "reason", step.Message)
		}
		return c.issue(ctx, nc, node, in)
	case reboot.MarkIssued:
		return c.markIssued(ctx, nc)
	case reboot.Succeed:
		return c.succeed(ctx, nc, in, step)
	case reboot.Fail:
		var n *corev1.Node
		if found {
			n = node
		}
		return c.fail(ctx, nc, n, in, step)
	default:
		if step.BootChanged && in.Phase == reboot.Issued {
			c.observed(nc)
		}
		return reconcile.Result{RequeueAfter: step.Requeue}, nil
	}
}

// InputOf gathers the decision's input from the NodeClaim and its Node (found false: no Node).
func InputOf(now time.Time, nc *karpv1.NodeClaim, node *corev1.Node, found bool) reboot.Input {
	cond := nc.GetCondition(karpv1.ConditionTypeRebooting)
	in := reboot.Input{Now: now, NodeFound: found}
	if cond != nil {
		in.Phase, in.RequestedAt = reboot.Phase(cond.Reason), cond.LastTransitionTime.Time
	}
	if init := nc.GetCondition(karpv1.ConditionTypeInitialized); init != nil && init.Status == metav1.ConditionUnknown &&
		init.Reason == karpv1.RebootReasonRebooting {
		in.IssuedAt = init.LastTransitionTime.Time
	}
	in.PreBootID, in.HasPreBootID = nc.Annotations[karpv1.RebootPreBootIDAnnotationKey]
	in.GracePeriod, in.HasGracePeriod = nc.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey]
	if found {
		in.BootID = node.Status.NodeInfo.BootID
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				in.Ready = c.Status == corev1.ConditionTrue
			}
		}
	}
	return in
}

// issue fences the Node, records its boot ID, and asks the cloud for the reboot; a refusal retrying cannot change
// (or an instance gone) fails the reboot at once, other errors are retried until reboot.IssuanceTimeout.
func (c *Controller) issue(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, in reboot.Input) (reconcile.Result, error) {
	// EC2 takes no client token for a reboot: a cache that has not seen this reboot issued yet must not make a second
	// call. The API server's copy decides.
	fresh := &karpv1.NodeClaim{}
	if err := c.reader().Get(ctx, client.ObjectKeyFromObject(nc), fresh); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("reading nodeclaim %s: %w", nc.Name, err))
	}
	if cond := fresh.GetCondition(karpv1.ConditionTypeRebooting); cond == nil || cond.Status != metav1.ConditionTrue ||
		cond.Reason != karpv1.RebootReasonRequested || !fresh.DeletionTimestamp.IsZero() {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	nc = fresh
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	if _, ok := c.issuing[nc.UID]; !ok {
		c.issuing[nc.UID] = c.deps.Clock.Now()
	}
	c.mu.Unlock()
	if !in.HasPreBootID || in.PreBootID != node.Status.NodeInfo.BootID {
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[karpv1.RebootPreBootIDAnnotationKey] = node.Status.NodeInfo.BootID
		if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("recording the boot ID of nodeclaim %s: %w", nc.Name, err)
		}
	}
	rebooter, ok := cloudprovider.Find[cloudprovider.Rebooter](c.deps.CloudProvider)
	if !ok {
		return c.fail(ctx, nc, node, in, reboot.Step{Action: reboot.Fail, Result: reboot.ProviderError,
			Message: fmt.Sprintf("the %s cloud provider cannot reboot nodes", c.deps.CloudProvider.Name())})
	}
	if err := rebooter.Reboot(ctx, nc); err != nil {
		if cloudprovider.IsRebootRefused(err) || cloudprovider.IsNotFound(err) {
			return c.fail(ctx, nc, node, in, reboot.Step{Action: reboot.Fail, Result: reboot.ProviderError,
				Message: "the cloud provider refused the reboot: " + err.Error()})
		}
		return reconcile.Result{}, fmt.Errorf("rebooting nodeclaim %s: %w", nc.Name, err)
	}
	log.FromContext(ctx).Info("reboot issued", "boot-id", node.Status.NodeInfo.BootID)
	return c.markIssued(ctx, nc)
}

// reader reads from the API server when the controller has a direct reader, else through the cache.
func (c *Controller) reader() client.Reader {
	if c.deps.APIReader != nil {
		return c.deps.APIReader
	}
	return c.deps.Client
}

// forget drops what the controller keeps about a NodeClaim's reboot.
func (c *Controller) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.issuing, uid)
	c.mu.Unlock()
}

// podsOn lists the pods bound to the node.
func (c *Controller) podsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.PodNodeName: node}); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", node, err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// drain fences the node and evicts the pods of the drain's current wave through the Eviction API, so that
// PodDisruptionBudgets apply: a refused eviction is tried again at the next look. Pods with
// karpenter.sh/do-not-disrupt are not evicted; the drain waits for them until its grace period ends.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, plan termination.DrainPlan, step reboot.Step) (reconcile.Result, error) {
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	logger := log.FromContext(ctx)
	for _, pod := range plan.Evict {
		uid := pod.UID
		err := c.deps.Client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
		})
		if code, ok := metrics.EvictionCode(err); ok && c.deps.Metrics != nil {
			c.deps.Metrics.PodsEvictionRequests.WithLabelValues(code).Inc()
		}
		switch {
		case err == nil:
			if c.deps.Metrics != nil {
				c.deps.Metrics.PodsDrained.WithLabelValues(drainedReason).Inc()
			}
			logger.Info("evicted pod before reboot", "pod", pod.Namespace+"/"+pod.Name)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		case apierrors.IsTooManyRequests(err):
			logger.V(1).Info("eviction before reboot refused, retrying", "pod", pod.Namespace+"/"+pod.Name, "reason", err.Error())
		default:
			return reconcile.Result{}, fmt.Errorf("evicting pod %s/%s before reboot: %w", pod.Namespace, pod.Name, err)
		}
	}
	if len(plan.DoNotDisrupt) > 0 {
		logger.V(1).Info("drain before reboot waits for do-not-disrupt pods", "pods", len(plan.DoNotDisrupt))
	}
	return reconcile.Result{RequeueAfter: step.Requeue}, nil
}

// markIssued moves the reboot to RebootIssued; the NodeClaim's Initialized condition turns Unknown (reason
// Rebooting) until the reboot ends, and its transition time starts the observation window.
func (c *Controller) markIssued(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	err := c.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
		cond := nc.GetCondition(karpv1.ConditionTypeRebooting)
		msg := ""
		if cond != nil {
			msg = cond.Message
		}
		nc.SetCondition(karpv1.ConditionTypeRebooting, metav1.ConditionTrue, karpv1.RebootReasonIssued, msg)
		nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, karpv1.RebootReasonRebooting, "the node is rebooting")
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	c.forget(nc.UID)
	return reconcile.Result{RequeueAfter: reboot.PollInterval}, nil
}

// succeed ends a reboot whose node came back.
func (c *Controller) succeed(ctx context.Context, nc *karpv1.NodeClaim, in reboot.Input, step reboot.Step) (reconcile.Result, error) {
	c.observed(nc)
	if err := c.end(ctx, nc, karpv1.RebootReasonSucceeded, step.Message); err != nil {
		return reconcile.Result{}, err
	}
	now := c.deps.Clock.Now()
	c.record(step.Result, now.Sub(in.RequestedAt))
	if !in.IssuedAt.IsZero() {
		c.deps.Metrics.NodeRebootRecovery.Observe(now.Sub(in.IssuedAt).Seconds())
	}
	log.FromContext(ctx).Info("reboot succeeded", "boot-id", in.BootID)
	return reconcile.Result{}, nil
}

// fail ends a failed reboot: the fence goes, a RebootFailed event says why, and, unless the request itself was
// invalid, the NodeClaim is deleted (its drain bounded by the reboot's grace period) so that the node is replaced.
func (c *Controller) fail(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, in reboot.Input, step reboot.Step) (reconcile.Result, error) {
	if node != nil {
		if err := c.untaint(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := c.end(ctx, nc, karpv1.RebootReasonFailed, step.Message); err != nil {
		return reconcile.Result{}, err
	}
	c.deps.Recorder.Event(nc, corev1.EventTypeWarning, karpv1.EventReasonRebootFailed, step.Message)
	c.record(step.Result, c.deps.Clock.Now().Sub(in.RequestedAt))
	if step.Result == reboot.InvalidRequest {
		log.FromContext(ctx).Info("reboot failed", "result", step.Result, "reason", step.Message)
		return reconcile.Result{}, nil
	}
	if in.HasGracePeriod {
		if d, err := reboot.ParseGracePeriod(in.GracePeriod); err == nil {
			if err := c.boundDrain(ctx, nc, c.deps.Clock.Now().Add(d)); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s after a failed reboot: %w", nc.Name, err)
	}
	log.FromContext(ctx).Info("reboot failed, replacing node", "result", step.Result, "reason", step.Message)
	return reconcile.Result{}, nil
}

// end turns the Rebooting condition false and drops the boot ID annotation; Initialized goes back to what the
// lifecycle controller finds (it initializes the NodeClaim again once its Node is ready).
func (c *Controller) end(ctx context.Context, nc *karpv1.NodeClaim, reason, msg string) error {
	c.forget(nc.UID)
	if _, ok := nc.Annotations[karpv1.RebootPreBootIDAnnotationKey]; ok {
		stored := nc.DeepCopy()
		delete(nc.Annotations, karpv1.RebootPreBootIDAnnotationKey)
		if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("removing the boot ID of nodeclaim %s: %w", nc.Name, err)
		}
	}
	return c.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
		nc.SetCondition(karpv1.ConditionTypeRebooting, metav1.ConditionFalse, reason, msg)
		if init := nc.GetCondition(karpv1.ConditionTypeInitialized); init != nil && init.Reason == karpv1.RebootReasonRebooting {
			nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, karpv1.RebootReasonRebooting, "the node rebooted and is being initialized again")
		}
	})
}

// boundDrain sets karpenter.sh/nodeclaim-termination-timestamp to at, unless the NodeClaim holds an earlier one.
func (c *Controller) boundDrain(ctx context.Context, nc *karpv1.NodeClaim, at time.Time) error {
	if v, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := termination.ParseDeadline(v); err == nil && !t.After(at) {
			return nil
		}
	}
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = at.UTC().Format(time.RFC3339)
	if err := c.deps.Client.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("bounding the drain of nodeclaim %s: %w", nc.Name, err))
	}
	return nil
}

// observed announces the node's new boot once per reboot: RebootObserved, when its Node shows a new boot ID.
func (c *Controller) observed(nc *karpv1.NodeClaim) {
	c.deps.Recorder.Event(nc, corev1.EventTypeNormal, karpv1.EventReasonRebootObserved, "New boot observed (the boot ID changed); waiting for the node to be Ready")
}

func (c *Controller) record(result reboot.Result, took time.Duration) {
	c.deps.Metrics.NodeReboots.WithLabelValues(string(result)).Inc()
	c.deps.Metrics.NodeRebootDuration.WithLabelValues(string(result)).Observe(took.Seconds())
}

// patchStatus applies change to the NodeClaim's status with an optimistic lock.
func (c *Controller) patchStatus(ctx context.Context, nc *karpv1.NodeClaim, change func(*karpv1.NodeClaim)) error {
	stored := nc.DeepCopy()
	change(nc)
	if err := c.deps.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the status of nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}

func hasRebootTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == karpv1.RebootingTaintKey {
			return true
		}
	}
	return false
}

// taint adds karpenter.sh/rebooting:NoSchedule to the Node.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	if hasRebootTaint(node) {
		return nil
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, karpv1.RebootingNoScheduleTaint())
	if err := c.deps.Client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node %s rebooting: %w", node.Name, err)
	}
	return nil
}

// untaint removes karpenter.sh/rebooting from the Node.
func (c *Controller) untaint(ctx context.Context, node *corev1.Node) error {
	if !hasRebootTaint(node) {
		return nil
	}
	stored := node.DeepCopy()
	kept := node.Spec.Taints[:0:0]
	for _, t := range node.Spec.Taints {
		if t.Key != karpv1.RebootingTaintKey {
			kept = append(kept, t)
		}
	}
	node.Spec.Taints = kept
	if err := c.deps.Client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the rebooting taint of node %s: %w", node.Name, err))
	}
	return nil
}
