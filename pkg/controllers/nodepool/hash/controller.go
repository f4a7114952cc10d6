package hash

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/hashversion"
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
		// A NodeClaim stamped in another scheme (launched by Karpenter, or created from a NodePool read before its
		// stamp moved) brings its NodePool back to restamp it.
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfForeignClaim)).
		Complete(deps.RetryTransient(c))
}

// nodePoolOfForeignClaim maps a NodeClaim stamped in another hashing scheme to its NodePool.
func nodePoolOfForeignClaim(_ context.Context, o client.Object) []reconcile.Request {
	pool := o.GetLabels()[karpv1.NodePoolLabelKey]
	if pool == "" || o.GetAnnotations()[karpv1.NodePoolHashVersionAnnotationKey] == hashversion.NodePoolVersion {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
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
	want := hashversion.NodePool(np)
	// NodeClaims first: they are compared with the NodePool's stamp as it was, which the patch below replaces.
	if err := c.restampNodeClaims(ctx, np, want); err != nil {
		return reconcile.Result{}, err
	}
	if np.Annotations[karpv1.NodePoolHashAnnotationKey] == want && np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == hashversion.NodePoolVersion {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFromWithOptions(np.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[karpv1.NodePoolHashAnnotationKey] = want
	np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = hashversion.NodePoolVersion
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

// restampNodeClaims moves the NodePool's NodeClaims stamped in another hashing scheme to this one
// (hashversion.Restamp): those launched from the NodePool's template as it is now get its current hash; those
// launched from an older template (the NodePool changed before Dovetail took over) keep showing drift. Karpenter
// does the same when its own scheme changes, so a takeover replaces no node that the NodePool's template does not
// ask to replace.
func (c *Controller) restampNodeClaims(ctx context.Context, np *karpv1.NodePool, want string) error {
	claims := &karpv1.NodeClaimList{}
	if err := c.kube.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodeclaims of nodepool %s: %w", np.Name, err)
	}
	owner := hashversion.Stamp{Hash: np.Annotations[karpv1.NodePoolHashAnnotationKey], Version: np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]}
	current := hashversion.Stamp{Hash: want, Version: hashversion.NodePoolVersion}
	for i := range claims.Items {
		nc := &claims.Items[i]
		have := hashversion.Stamp{Hash: nc.Annotations[karpv1.NodePoolHashAnnotationKey], Version: nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]}
		if have.Version == hashversion.NodePoolVersion || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		stamp, drifted := hashversion.Restamp(have, owner, current)
		// The stamp is computed from the copy read, so the patch applies only to that version: read from a cache
		// behind this controller's own earlier restamp and compared with the NodePool's new stamp, a NodeClaim of the
		// older template would otherwise lose its drifted stamp (a conflict requeues the pass instead).
		patch := map[string]any{"metadata": map[string]any{
			"resourceVersion": nc.ResourceVersion,
			"annotations": map[string]string{
				karpv1.NodePoolHashAnnotationKey:        stamp.Hash,
				karpv1.NodePoolHashVersionAnnotationKey: stamp.Version,
			},
		}}
		raw, err := json.Marshal(patch)
		if err != nil {
			return fmt.Errorf("encoding the hash patch of nodeclaim %s: %w", nc.Name, err)
		}
		target := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
		if err := c.kube.Patch(ctx, target, client.RawPatch(types.MergePatchType, raw)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("restamping nodeclaim %s: %w", nc.Name, err)
		}
		log.FromContext(ctx).Info("restamped nodeclaim hash", "nodeclaim", nc.Name, "nodepool", np.Name,
			"from-version", have.Version, "to-version", stamp.Version, "drifted", drifted)
	}
	return nil
}
