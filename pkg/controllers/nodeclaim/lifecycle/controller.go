package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.lifecycle"

// Requeue intervals while waiting on the cloud or the kubelet.
const (
	nodeClassRequeue    = 10 * time.Second
	registrationRequeue = 10 * time.Second
)

// Controller runs the NodeClaim lifecycle.
type Controller struct {
	deps deps.Deps
	// launches remembers, by NodeClaim name, launches this controller made that its cache may not show yet.
	launches *launchMemo
	// started is when this controller began running its launches (as leader), zero until then; see firstLaunch.
	started atomic.Pointer[time.Time]
	// conflicts spaces the passes of a NodeClaim whose writes keep meeting a stale copy.
	conflicts *deps.ConflictBackoff
}

// maxConcurrentReconciles is how many NodeClaims the controller works on at once.
const maxConcurrentReconciles = 50

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, launches: newLaunchMemo(), conflicts: deps.NewConflictBackoff()}
}

// Register adds the controller to the manager: it watches NodeClaims and the Nodes that match them.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	// Only a free worker can bring a launch to the provider's launch window: while every worker is busy (in
	// the window, or registering), the window need not wait for the launches noted.
	c.deps.LaunchNotices.SetLaunchers(maxConcurrentReconciles)
	// Runs with the controller, once this replica leads.
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.Started(c.deps.Clock.Now())
		<-ctx.Done()
		return nil
	})); err != nil {
		return fmt.Errorf("adding %s start marker: %w", Name, err)
	}
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeToNodeClaims)).
		// Launches and registrations are independent per NodeClaim and mostly wait on the cloud and the API
		// server: one worker made a 500-node scale-out register at about 0.3 nodes a second.
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(deps.RetryTransient(c))
}

func (c *Controller) nodeToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	if node.Spec.ProviderID == "" {
		return nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, nc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
	}
	return out
}

// step is one lifecycle phase. It may change nc (status and metadata) and asks to stop the pass by returning
// done (the NodeClaim was deleted or must wait).
type step func(ctx context.Context, nc *karpv1.NodeClaim) (result reconcile.Result, done bool, err error)

// reconcileOnce advances the NodeClaim as far as it can in one pass.
func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, Name)
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.launches.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		c.launches.forget(req.Name)
		return reconcile.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		patch := client.MergeFromWithOptions(nc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(nc, karpv1.TerminationFinalizer)
		if err := c.deps.Client.Patch(ctx, nc, patch); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding finalizer: %w", err))
		}
	}
	for _, s := range []step{c.launch, c.register, c.initialize, c.tag} {
		res, done, err := s(ctx, nc)
		if err != nil || done {
			return res, err
		}
	}
	return reconcile.Result{}, nil
}

// patchStatus writes nc's status if it differs from stored, with optimistic locking.
func (c *Controller) patchStatus(ctx context.Context, stored, nc *karpv1.NodeClaim) error {
	if equalStatus(stored, nc) {
		return nil
	}
	if err := c.deps.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
	}
	c.deps.Metrics.RecordNodeClaimConditions(nc.CreationTimestamp.Time, stored.Status.Conditions, nc.Status.Conditions)
	return nil
}

func (c *Controller) since(nc *karpv1.NodeClaim) time.Duration {
	return c.deps.Clock.Since(nc.CreationTimestamp.Time)
}

// deleteNodeClaim deletes nc, leaving cleanup to the termination controller.
func (c *Controller) deleteNodeClaim(ctx context.Context, nc *karpv1.NodeClaim) error {
	if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim: %w", err)
	}
	return nil
}

// Reconcile runs reconcileOnce. A write rejected for a stale copy (optimistic-lock conflict) is retried after a
// backoff that grows while the conflicts go on (deps.ConflictBackoff) instead of being reported as an error; a
// result with an error drops the result, as controller-runtime does.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.deps.LaunchNotices.Started()
	res, err := c.reconcileOnce(ctx, req)
	c.deps.LaunchNotices.Finished()
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: c.conflicts.Conflict(req.Name)}, nil
	}
	c.conflicts.Done(req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	return res, nil
}
