package capacity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/operator/index"
)

// Name is the controller's name in logs and metrics.
const Name = "node.capacity"

// Controller hands registered Nodes to the cloud provider's CapacityLearner.
type Controller struct{ deps deps.Deps }

// NewController returns the controller; it does nothing when deps.CapacityLearner is nil.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register watches Nodes: those created registered (the cache filling at start) and those becoming registered.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.deps.CapacityLearner == nil {
		return nil
	}
	registered := func(o client.Object) bool { return o.GetLabels()[karpv1.NodeRegisteredLabelKey] == "true" }
	return builder.ControllerManagedBy(m).Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return registered(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool { return !registered(e.ObjectOld) && registered(e.ObjectNew) },
			DeleteFunc: func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool {
				return false
			},
		})).
		Complete(c)
}

// Reconcile hands one registered Node and its NodeClaim to the cloud provider.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if c.deps.CapacityLearner == nil {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading node %s: %w", req.Name, err)
	}
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || node.Spec.ProviderID == "" || !node.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of node %s: %w", node.Name, err)
	}
	if len(list.Items) != 1 {
		return reconcile.Result{}, nil
	}
	if err := c.deps.CapacityLearner.LearnNodeCapacity(ctx, node, &list.Items[0]); err != nil {
		return reconcile.Result{}, fmt.Errorf("learning the capacity of node %s: %w", node.Name, err)
	}
	return reconcile.Result{}, nil
}
