package hash

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// Name is the controller's name in logs and metrics.
const Name = "nodepool.hash"

// Controller writes the hash annotations on NodePools.
type Controller struct {
	kube client.Client
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{kube: d.Client} }

// Register adds the controller to the manager.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(deps.RetryTransient(c))
}

// reconcileOnce sets the annotations when they differ from the template's hash.
func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	want := Compute(np)
	if np.Annotations[karpv1.NodePoolHashAnnotationKey] == want && np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == Version {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFromWithOptions(np.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[karpv1.NodePoolHashAnnotationKey] = want
	np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = Version
	if err := c.kube.Patch(ctx, np, patch); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool hash: %w", err))
	}
	log.FromContext(ctx).V(1).Info("updated nodepool hash", "nodepool", np.Name, "hash", want)
	return reconcile.Result{}, nil
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
