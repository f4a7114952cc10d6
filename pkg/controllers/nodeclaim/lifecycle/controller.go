package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
	// registrations remembers, by NodeClaim name, the registrations this controller wrote that its cache may not
	// show yet.
	registrations *registrationMemo
	// written keeps each NodeClaim as this controller last wrote it, for the passes that read it from a cache
	// still behind that write.
	written *deps.OwnWrites[*karpv1.NodeClaim]
	// poolWrites keeps each NodePool as the registration health last wrote it; poolMu serializes those writes.
	poolWrites *deps.OwnWrites[*karpv1.NodePool]
	poolMu     sync.Mutex
	// started is when this controller began running its launches (as leader), zero until then; see firstLaunch.
	started atomic.Pointer[time.Time]
	// conflicts spaces the passes of a NodeClaim whose writes keep meeting a stale copy; launchConflicts does so
	// for the launch workers (each keeps its own count, which the other's success would reset).
	conflicts, launchConflicts *deps.ConflictBackoff
}

// maxConcurrentReconciles is how many NodeClaims the controller registers and initializes at once.
const maxConcurrentReconciles = 50

// launchWorkers is how many NodeClaims are launched at once. Launches have workers of their own: a launch waits
// in the cloud provider's launch window for identical launches to share a CreateFleet call, and while the
// launches and the registrations of a scale-out shared 50 workers, every wait in a window delayed registrations
// and every registration closed windows early (measured on the local stack, 2026-11-27).
const launchWorkers = 50

// LaunchName is the name of the launch workers' controller in logs and metrics.
const LaunchName = Name + ".launch"

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, launches: newLaunchMemo(), registrations: newRegistrationMemo(),
		written:    deps.NewOwnWrites[*karpv1.NodeClaim](d.Clock, maxCacheLag),
		poolWrites: deps.NewOwnWrites[*karpv1.NodePool](d.Clock, maxCacheLag),
		conflicts:  deps.NewConflictBackoff(), launchConflicts: deps.NewConflictBackoff()}
}

// Register adds the controller to the manager as two controllers on NodeClaims: the launch workers
// (LaunchName), which launch the NodeClaims not launched yet, and the lifecycle workers (Name), which register
// and initialize the launched ones and also watch the Nodes that match them.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	// Only a free launch worker can bring a launch to the provider's launch window: while every one is busy (in
	// the window, or calling the cloud), the window need not wait for the launches noted.
	c.deps.LaunchNotices.SetLaunchers(launchWorkers)
	// Runs with the controller, once this replica leads.
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.Started(c.deps.Clock.Now())
		<-ctx.Done()
		return nil
	})); err != nil {
		return fmt.Errorf("adding %s start marker: %w", Name, err)
	}
	// The launch workers see a NodeClaim until the update that marks it launched (which makes them forget
	// what they kept of its launch) and its deletion.
	unlaunched := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return !isLaunched(e.ObjectOld) || !isLaunched(e.ObjectNew) },
	}
	if err := builder.ControllerManagedBy(m).Named(LaunchName).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(unlaunched)).
		WithOptions(controller.Options{MaxConcurrentReconciles: launchWorkers}).
		Complete(deps.RetryTransient(reconcile.Func(c.ReconcileLaunch))); err != nil {
		return fmt.Errorf("building %s: %w", LaunchName, err)
	}
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodeClaim{}).
		// A Node's heartbeat changes nothing registration or initialization reads.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeToNodeClaims), builder.WithPredicates(deps.NotHeartbeat())).
		// Registrations are independent per NodeClaim and mostly wait on the API server: one worker made a
		// 500-node scale-out register at about 0.3 nodes a second.
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(deps.RetryTransient(reconcile.Func(c.ReconcileLaunched)))
}

// isLaunched reports whether o is a NodeClaim marked Launched.
func isLaunched(o client.Object) bool {
	nc, ok := o.(*karpv1.NodeClaim)
	return ok && nc.IsTrue(karpv1.ConditionTypeLaunched)
}

func (c *Controller) nodeToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	if node.Spec.ProviderID == "" {
		return nil
	}
	list := &karpv1.NodeClaimList{}
	// Read only (names, references): the cache's objects, not copies.
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
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

// reconcileOnce advances the NodeClaim through steps as far as it can in one pass.
func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request, name string, steps ...step) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, name)
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.gone(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A cache behind this controller's own last write would have the steps write from the older copy, which the
	// API server refuses.
	nc, _ = c.written.Latest(nc)
	if !nc.DeletionTimestamp.IsZero() {
		c.gone(req.Name)
		return reconcile.Result{}, nil
	}
	for _, s := range steps {
		res, done, err := s(ctx, nc)
		if err != nil || done {
			return res, err
		}
	}
	return reconcile.Result{}, nil
}

// addFinalizer puts the termination finalizer on the NodeClaim, before its launch: its instance is then never
// left behind by a deletion.
func (c *Controller) addFinalizer(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	if controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, false, nil
	}
	patch := client.MergeFromWithOptions(nc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(nc, karpv1.TerminationFinalizer)
	if err := c.deps.Client.Patch(ctx, nc, patch); err != nil {
		return reconcile.Result{}, true, client.IgnoreNotFound(fmt.Errorf("adding finalizer: %w", err))
	}
	c.written.Wrote(nc)
	return reconcile.Result{}, false, nil
}

// gone forgets what is kept of a NodeClaim deleted or being deleted, including the provisioner's note that its
// launch is on its way: a NodeClaim deleted before its launch (surplus, or its NodePool gone) would otherwise
// hold every launch window open to its bound until the note expired.
func (c *Controller) gone(name string) {
	c.launches.forget(name)
	c.registrations.forget(name)
	c.written.Forget(name)
	c.deps.LaunchNotices.Arrived(name)
}

// waitLaunched stops the lifecycle workers' pass at a NodeClaim not launched yet: the launch workers launch it,
// and the update marking it launched brings it back.
func (c *Controller) waitLaunched(_ context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	return reconcile.Result{}, !nc.IsTrue(karpv1.ConditionTypeLaunched), nil
}

// patchStatus writes nc's status if it differs from stored: only the fields and conditions that changed, each
// changed condition tested to be still as stored read it (deps.PatchNodeClaimStatus); other controllers'
// conditions and labels written meanwhile no longer make it fail, as a lock on the whole NodeClaim did.
func (c *Controller) patchStatus(ctx context.Context, stored, nc *karpv1.NodeClaim) error {
	if equalStatus(stored, nc) {
		return nil
	}
	if err := deps.PatchNodeClaimStatus(ctx, c.deps.Client, stored, nc); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
	}
	c.written.Wrote(nc)
	c.deps.Metrics.RecordNodeClaimConditions(nc.Labels, nc.CreationTimestamp.Time, stored.Status.Conditions, nc.Status.Conditions)
	return nil
}

// patchStatusFresh writes a status change made on nc (a copy from the cache, stored as read) and, when the write
// meets a newer NodeClaim (an optimistic-lock conflict: under load the cache is seconds behind, often behind this
// controller's own last write), reads the NodeClaim from the API server once, makes the change again there with
// change, and writes that. On success nc holds what was written. A registration that lost its write to the
// conflict backoff repeated its nominations and waited for a cache that stayed behind: in a 1,000-node scale-out
// NodeClaims took up to 16 passes and a minute to register after their Node had been written.
func (c *Controller) patchStatusFresh(ctx context.Context, stored, nc *karpv1.NodeClaim, change func(*karpv1.NodeClaim)) error {
	err := c.patchStatus(ctx, stored, nc)
	if !apierrors.IsConflict(err) {
		return err
	}
	fresh := &karpv1.NodeClaim{}
	if gerr := c.apiReader().Get(ctx, client.ObjectKeyFromObject(nc), fresh); gerr != nil {
		return err
	}
	if fresh.UID != nc.UID || !fresh.DeletionTimestamp.IsZero() {
		return err
	}
	freshStored := fresh.DeepCopy()
	change(fresh)
	if err := c.patchStatus(ctx, freshStored, fresh); err != nil {
		return err
	}
	fresh.DeepCopyInto(nc)
	return nil
}

// apiReader reads from the API server, past the cache, where a write just made or a clearing just done must be
// seen. The manager always provides one; a controller built without one (some tests) reads the cache instead.
func (c *Controller) apiReader() client.Reader {
	if c.deps.APIReader != nil {
		return c.deps.APIReader
	}
	return c.deps.Client
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

// Reconcile takes the NodeClaim through its whole lifecycle in one pass (launch, registration,
// initialization, tags), as the launch and lifecycle workers do between them. A write rejected for a stale
// copy (optimistic-lock conflict) is retried after a backoff that grows while the conflicts go on
// (deps.ConflictBackoff) instead of being reported as an error; a result with an error drops the result, as
// controller-runtime does.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.deps.LaunchNotices.Started()
	defer c.deps.LaunchNotices.Finished()
	return c.backoff(c.conflicts, req)(c.reconcileOnce(ctx, req, Name, c.addFinalizer, c.launch, c.register, c.initialize, c.tag))
}

// ReconcileLaunch is a launch worker's pass: it launches the NodeClaim if it is not launched yet.
func (c *Controller) ReconcileLaunch(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.deps.LaunchNotices.Started()
	defer c.deps.LaunchNotices.Finished()
	return c.backoff(c.launchConflicts, req)(c.reconcileOnce(ctx, req, LaunchName, c.addFinalizer, c.launch))
}

// ReconcileLaunched is a lifecycle worker's pass: it registers, initializes and tags a launched NodeClaim. It
// leaves a NodeClaim not launched yet to the launch workers entirely, the finalizer included: written by both,
// one of the two writes met a stale copy, and the conflict backoff delayed launches by seconds under load.
func (c *Controller) ReconcileLaunched(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return c.backoff(c.conflicts, req)(c.reconcileOnce(ctx, req, Name, c.waitLaunched, c.addFinalizer, c.register, c.initialize, c.tag))
}

// backoff turns a pass's conflict into a requeue after b's backoff for the NodeClaim, and forgets its conflicts
// once a pass ends otherwise.
func (c *Controller) backoff(b *deps.ConflictBackoff, req reconcile.Request) func(reconcile.Result, error) (reconcile.Result, error) {
	return func(res reconcile.Result, err error) (reconcile.Result, error) {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: b.Conflict(req.Name)}, nil
		}
		b.Done(req.Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		return res, nil
	}
}
