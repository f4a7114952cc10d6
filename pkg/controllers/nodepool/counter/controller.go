package counter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics.
const Name = "nodepool.counter"

// ResourceNodes is the "nodes" entry of status.resources and limits.
const ResourceNodes corev1.ResourceName = "nodes"

// Controller counts a NodePool's resources.
type Controller struct {
	deps deps.Deps
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d}
}

// CountDelay batches a NodePool's NodeClaim events into one count: the first event schedules a count this much
// later and the events until then join it. Every NodeClaim event counted at once made the NodePool's counts a
// quarter of the controller's CPU while a consolidation changed hundreds of NodeClaims a minute.
const CountDelay = time.Second

// Register adds the controller; NodeClaim changes that change what it counts enqueue their NodePool (CountDelay
// later).
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	later := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if pool := o.GetLabels()[karpv1.NodePoolLabelKey]; pool != "" {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}}, CountDelay)
		}
	}
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				later(e.Object, q)
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				o, ok1 := e.ObjectOld.(*karpv1.NodeClaim)
				n, ok2 := e.ObjectNew.(*karpv1.NodeClaim)
				if ok1 && ok2 && !countedChange(o, n) {
					return
				}
				later(e.ObjectNew, q)
				if e.ObjectOld.GetLabels()[karpv1.NodePoolLabelKey] != e.ObjectNew.GetLabels()[karpv1.NodePoolLabelKey] {
					later(e.ObjectOld, q)
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				later(e.Object, q)
			},
			GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				later(e.Object, q)
			},
		}).
		Complete(deps.RetryTransient(c))
}

// countedChange reports whether a NodeClaim update changes what the counter reads of it: its labels (NodePool
// and offering), deletion, node name, capacity or allocatable. Most updates do not (each pod bound to a node
// moves its NodeClaim's lastPodEventTime), and a count lists every NodeClaim of the pool.
func countedChange(old, nc *karpv1.NodeClaim) bool {
	return old.DeletionTimestamp.IsZero() != nc.DeletionTimestamp.IsZero() || old.Status.NodeName != nc.Status.NodeName ||
		!maps.Equal(old.Labels, nc.Labels) || !equality.Semantic.DeepEqual(old.Status.Capacity, nc.Status.Capacity) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, nc.Status.Allocatable)
}

// reconcileOnce updates the NodePool's counts, or deletes the NodeClaims of a NodePool that is going away.
func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claims := &karpv1.NodeClaimList{}
	// The cache's own objects, read only (a NodePool of 600 NodeClaims spent most of its count copying them).
	if err := c.deps.Client.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: req.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	np := &karpv1.NodePool{}
	err := c.deps.Client.Get(ctx, req.NamespacedName, np)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("getting nodepool: %w", err)
	}
	if err != nil || !np.DeletionTimestamp.IsZero() {
		c.forget(req.Name)
		return reconcile.Result{}, c.deleteClaims(ctx, req.Name, claims.Items)
	}
	resources := corev1.ResourceList{}
	var nodes int64
	for _, nc := range claims.Items {
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		nodes++
		for name, q := range nc.Status.Capacity {
			sum := resources[name]
			sum.Add(q)
			resources[name] = sum
		}
	}
	resources[ResourceNodes] = *resource.NewQuantity(nodes, resource.DecimalSI)
	c.export(np, resources, claims.Items)
	if np.Status.Nodes != nil && *np.Status.Nodes == nodes && equality.Semantic.DeepEqual(np.Status.Resources, resources) {
		return reconcile.Result{}, nil
	}
	stored := np.DeepCopy()
	np.Status.Resources = resources
	np.Status.Nodes = &nodes
	// Only the counted fields, which this controller alone writes: the conditions other controllers write
	// meanwhile do not make it fail.
	if err := deps.PatchNodePoolStatus(ctx, c.deps.Client, stored, np); err != nil {
		if apierrors.IsConflict(err) {
			// Another controller wrote the status first: start again from the newer object, quietly.
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

func (c *Controller) deleteClaims(ctx context.Context, pool string, claims []karpv1.NodeClaim) error {
	var errs []error
	for i := range claims {
		nc := claims[i].DeepCopy() // claims are the cache's objects
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		log.FromContext(ctx).Info("deleting nodeclaim of deleted nodepool", "nodeclaim", nc.Name, "nodepool", pool)
		if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// export sets the NodePool's usage and limit gauges.
func (c *Controller) export(np *karpv1.NodePool, usage corev1.ResourceList, claims []karpv1.NodeClaim) {
	m := c.deps.Metrics
	m.NodePoolUsage.DeletePartialMatch(prometheus.Labels{metrics.LabelNodePool: np.Name})
	m.NodePoolLimit.DeletePartialMatch(prometheus.Labels{metrics.LabelNodePool: np.Name})
	for name, q := range usage {
		m.NodePoolUsage.WithLabelValues(np.Name, string(name)).Set(q.AsApproximateFloat64())
	}
	for name, q := range np.Spec.Limits {
		m.NodePoolLimit.WithLabelValues(np.Name, string(name)).Set(q.AsApproximateFloat64())
	}
	m.SetNodePoolCost(np.Name, claims)
}

func (c *Controller) forget(pool string) {
	c.deps.Metrics.NodePoolUsage.DeletePartialMatch(prometheus.Labels{metrics.LabelNodePool: pool})
	c.deps.Metrics.NodePoolLimit.DeletePartialMatch(prometheus.Labels{metrics.LabelNodePool: pool})
	c.deps.Metrics.ForgetNodePoolCost(pool)
}

// Reconcile runs reconcileOnce. A write rejected for a stale copy (optimistic-lock conflict) is retried shortly
// instead of being reported as an error; a result with an error drops the result, as controller-runtime does.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcileOnce(ctx, req)
	switch {
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	return res, nil
}

// conflictRequeue is how soon a pass that hit a stale copy runs again.
const conflictRequeue = 100 * time.Millisecond
