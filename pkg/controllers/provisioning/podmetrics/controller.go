package podmetrics

import (
	"context"
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
)

// Name is the controller's name in logs and metrics.
const Name = "pod.metrics"

// Controller observes each pod's startup once.
type Controller struct {
	deps deps.Deps
	mu   sync.Mutex
	// seen holds the UID of each pod whose startup was observed, by the pod's name; a pod's deletion (its
	// reconcile finding it gone) forgets it.
	seen map[types.NamespacedName]types.UID
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, seen: map[types.NamespacedName]types.UID{}}
}

// Register adds the controller.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).For(&corev1.Pod{}).Complete(deps.RetryTransient(c))
}

// Reconcile records the pod's startup duration the first time it is seen running on a Dovetail node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.mu.Lock()
			delete(c.seen, req.NamespacedName)
			c.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	started, ok := StartedAt(pod)
	if !ok || pod.Spec.NodeName == "" {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	done := c.seen[req.NamespacedName] == pod.UID
	c.mu.Unlock()
	if done {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.mu.Lock()
	c.seen[req.NamespacedName] = pod.UID
	c.mu.Unlock()
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		return reconcile.Result{}, nil
	}
	c.deps.Metrics.PodsStartupDuration.Observe(started.Sub(pod.CreationTimestamp.Time).Seconds())
	return reconcile.Result{}, nil
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
