package podmetrics

import (
	"context"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics.
const Name = "pod.metrics"

// Controller keeps each pod's karpenter_pods_state entry and observes its bind and startup once.
type Controller struct {
	deps deps.Deps
	mu   sync.Mutex
	// seen holds the UID of each pod whose startup was observed, by the pod's name; a pod's deletion (its
	// reconcile finding it gone) forgets it.
	seen map[types.NamespacedName]types.UID
	// unbound holds the UID of each pod seen pending and unbound, until it is seen bound.
	unbound map[types.NamespacedName]types.UID
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, seen: map[types.NamespacedName]types.UID{}, unbound: map[types.NamespacedName]types.UID{}}
}

// Register adds the controller.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).For(&corev1.Pod{}).Complete(deps.RetryTransient(c))
}

// Reconcile records the pod's entry in karpenter_pods_state, its bind time the first time it is seen bound after
// it was seen unbound, and its startup duration the first time it is seen running on a Dovetail node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.mu.Lock()
			delete(c.seen, req.NamespacedName)
			delete(c.unbound, req.NamespacedName)
			c.mu.Unlock()
			c.deps.Metrics.Pods.Delete(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	node := &corev1.Node{}
	if pod.Spec.NodeName != "" {
		if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	c.deps.Metrics.Pods.Set(entry(pod, node))
	c.recordBound(pod)
	c.recordProvisioningStartup(pod)
	started, ok := StartedAt(pod)
	if !ok || pod.Spec.NodeName == "" || node.Name == "" {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	done := c.seen[req.NamespacedName] == pod.UID
	c.seen[req.NamespacedName] = pod.UID
	c.mu.Unlock()
	if done || node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		return reconcile.Result{}, nil
	}
	c.deps.Metrics.PodsStartupDuration.Observe(started.Sub(pod.CreationTimestamp.Time).Seconds())
	return reconcile.Result{}, nil
}

// recordBound observes karpenter_pods_bound_duration_seconds when a pod seen unbound is bound.
func (c *Controller) recordBound(pod *corev1.Pod) {
	key := client.ObjectKeyFromObject(pod)
	cond := podCondition(pod, corev1.PodScheduled)
	bound := cond != nil && cond.Status == corev1.ConditionTrue
	c.mu.Lock()
	defer c.mu.Unlock()
	if !bound {
		if pod.Status.Phase == corev1.PodPending {
			c.unbound[key] = pod.UID
		}
		return
	}
	if uid, ok := c.unbound[key]; !ok || uid != pod.UID {
		return
	}
	delete(c.unbound, key)
	dynamic := strconv.FormatBool(metrics.AsksForDynamicResources(pod))
	c.deps.Metrics.PodsBoundDuration.WithLabelValues(dynamic).Observe(cond.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
	if t, ok := c.deps.Metrics.Pods.Times.Get(key, pod.UID); ok && !t.Schedulable.IsZero() {
		c.deps.Metrics.PodsProvisioningBoundDuration.WithLabelValues(dynamic).Observe(
			max(cond.LastTransitionTime.Sub(t.Schedulable), 0).Seconds())
	}
}

// recordProvisioningStartup observes karpenter_pods_provisioning_startup_duration_seconds when a pod a provisioning
// pass found a place for becomes Ready, from that pass to the Ready condition's transition, and forgets the pod's
// scheduling moments then, or when it ends without becoming Ready.
func (c *Controller) recordProvisioningStartup(pod *corev1.Pod) {
	key := client.ObjectKeyFromObject(pod)
	times := c.deps.Metrics.Pods.Times
	t, ok := times.Get(key, pod.UID)
	if !ok {
		return
	}
	ready := podCondition(pod, corev1.PodReady)
	switch {
	case ready != nil && ready.Status == corev1.ConditionTrue:
		if !t.Schedulable.IsZero() {
			c.deps.Metrics.PodsProvisioningStartupDuration.Observe(max(ready.LastTransitionTime.Sub(t.Schedulable), 0).Seconds())
		}
		times.Forget(key)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		times.Forget(key)
	}
}

// entry is the pod's karpenter_pods_state entry; node is the Node it is bound to (empty when none).
func entry(pod *corev1.Pod, node *corev1.Node) *metrics.PodEntry {
	e := &metrics.PodEntry{Name: pod.Name, Namespace: pod.Namespace, Node: pod.Spec.NodeName, Phase: string(pod.Status.Phase),
		Created: pod.CreationTimestamp.Time, UID: pod.UID, DynamicResources: metrics.AsksForDynamicResources(pod)}
	if len(pod.OwnerReferences) > 0 {
		o := &pod.OwnerReferences[0]
		e.OwnerAPIVersion, e.OwnerKind, e.OwnerName = o.APIVersion, o.Kind, o.Name
	}
	if cond := podCondition(pod, corev1.PodReady); cond != nil {
		e.Ready = cond.Status == corev1.ConditionTrue
	}
	if cond := podCondition(pod, corev1.PodScheduled); cond != nil {
		e.Bound = cond.Status == corev1.ConditionTrue
	}
	l := node.Labels
	e.NodePool, e.Zone, e.Arch = l[karpv1.NodePoolLabelKey], l[corev1.LabelTopologyZone], l[corev1.LabelArchStable]
	e.CapacityType, e.InstanceType = l[karpv1.CapacityTypeLabelKey], l[corev1.LabelInstanceTypeStable]
	return e
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// StartedAt returns when the pod's first container started running, if one has.
func StartedAt(pod *corev1.Pod) (time.Time, bool) {
	var first time.Time
	for _, s := range pod.Status.ContainerStatuses {
		var at time.Time
		switch {
		case s.State.Running != nil:
			at = s.State.Running.StartedAt.Time
		case s.State.Terminated != nil:
			at = s.State.Terminated.StartedAt.Time
		default:
			continue
		}
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}
