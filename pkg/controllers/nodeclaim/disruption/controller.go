package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.disruption"

// ReasonConsolidatable is the reason of a true Consolidatable condition.
const ReasonConsolidatable = "Consolidatable"

// ReasonExpired is the reason of the Event emitted on a NodeClaim deleted for expiration.
const ReasonExpired = "Expired"

// metricReasonExpired is the reason label of karpenter_nodeclaims_disrupted_total for expiration.
const metricReasonExpired = karpv1.MetricReasonExpired

const (
	// driftRecheck is how often a launched NodeClaim is re-evaluated without any watched change, so that
	// drift the cloud provider detects (a new image, subnets, security groups) is noticed.
	driftRecheck = 5 * time.Minute
	// maxConcurrentReconciles is how many NodeClaims the controller evaluates at once.
	maxConcurrentReconciles = 10
)

// Controller keeps the Drifted and Consolidatable conditions of NodeClaims and deletes expired NodeClaims.
type Controller struct {
	deps deps.Deps
	// conflicts spaces the passes of a NodeClaim whose writes keep meeting a stale copy.
	conflicts *deps.ConflictBackoff
	// written keeps each NodeClaim as this controller last wrote it, for the passes that read it from a cache
	// still behind that write (a pod event right after Consolidatable was set would append it a second time).
	written *deps.OwnWrites[*karpv1.NodeClaim]
	// types are the NodePools' instance types the drift checks read.
	types *typesMemo
}

// ownWritesMaxAge bounds the trust in this controller's own writes over a cache that does not show them yet. An
// entry is dropped as soon as the cache is at or past the write (resource versions), so it only matters when the
// cache lags: on a saturated API server, watch events come minutes late.
const ownWritesMaxAge = 10 * time.Minute

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, conflicts: deps.NewConflictBackoff(), written: deps.NewOwnWrites[*karpv1.NodeClaim](d.Clock, ownWritesMaxAge), types: &typesMemo{}}
}

// Register adds the controller to the manager. Besides NodeClaims it watches NodePools (a template or
// consolidateAfter change re-evaluates every NodeClaim of the NodePool), EC2NodeClass spec changes (drift of
// every NodeClaim of the class is noticed at once rather than at the next driftRecheck) and the labels of Nodes.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodeClaim{}).
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.nodePoolToNodeClaims),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.nodeClassToNodeClaims),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeToNodeClaims),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(deps.RetryTransient(c))
}

func (c *Controller) nodePoolToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	list := &karpv1.NodeClaimList{}
	// Read only (names, references): the cache's objects, not copies.
	if err := c.deps.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of nodepool", "nodepool", o.GetName())
		return nil
	}
	return requests(list.Items)
}

// nodeClassToNodeClaims maps an EC2NodeClass to the NodeClaims launched from it.
func (c *Controller) nodeClassToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	list := &karpv1.NodeClaimList{}
	// Read only (names, references): the cache's objects, not copies.
	if err := c.deps.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of node class", "ec2nodeclass", o.GetName())
		return nil
	}
	var of []karpv1.NodeClaim
	for _, nc := range list.Items {
		if ref := nc.Spec.NodeClassRef; ref != nil && ref.Name == o.GetName() && ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass" {
			of = append(of, nc)
		}
	}
	return requests(of)
}

func (c *Controller) nodeToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	if node.Spec.ProviderID == "" {
		return nil
	}
	list := &karpv1.NodeClaimList{}
	// Read only (names, references): the cache's objects, not copies.
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of node", "node", node.Name)
		return nil
	}
	return requests(list.Items)
}

func requests(ncs []karpv1.NodeClaim) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(ncs))
	for _, nc := range ncs {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
	}
	return out
}

// reconcileOnce deletes the NodeClaim if it expired, otherwise brings its Drifted and Consolidatable
// conditions up to date and asks to run again when the next of them can change with time alone.
func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, Name)
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.written.Forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nc, _ = c.written.Latest(nc)
	if !nc.DeletionTimestamp.IsZero() {
		c.written.Forget(req.Name)
		return reconcile.Result{}, nil
	}
	now := c.deps.Clock.Now()
	exp := expirationAt(nc, now)
	if exp.Expired() {
		return reconcile.Result{}, c.expire(ctx, nc, exp)
	}
	var waits []time.Duration
	if exp.Enabled {
		waits = append(waits, exp.Wait)
	}
	np, err := c.nodePool(ctx, nc)
	if err != nil || np == nil {
		return reconcile.Result{RequeueAfter: shortest(waits)}, err
	}

	// The conditions as stored, for the write: the NodeClaim itself is copied only when they change (every
	// NodeClaim is evaluated every driftRecheck, and at rest none changes).
	stored := slices.Clone(nc.Status.Conditions)
	var errs []error
	if err := c.updateDrifted(ctx, nc, np); err != nil {
		errs = append(errs, err)
	}
	if nc.IsTrue(karpv1.ConditionTypeLaunched) {
		waits = append(waits, driftRecheck)
	}
	cons := consolidationAt(nc, np, now)
	c.updateConsolidatable(nc, cons)
	if cons.Enabled && !cons.Consolidatable() {
		waits = append(waits, cons.Wait)
	}
	if err := c.patchStatus(ctx, stored, nc); err != nil {
		errs = append(errs, err)
	}
	return reconcile.Result{RequeueAfter: shortest(waits)}, errors.Join(errs...)
}

// nodePool returns the NodeClaim's NodePool, or nil when it has none (no label, or the NodePool is gone): its
// conditions are then left as they are, since neither drift nor consolidateAfter can be evaluated.
func (c *Controller) nodePool(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodePool, error) {
	name := nc.NodePoolName()
	if name == "" {
		log.FromContext(ctx).V(1).Info("nodeclaim has no nodepool label; drift and consolidation not evaluated", "nodeclaim", nc.Name)
		return nil, nil
	}
	np := &karpv1.NodePool{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		if apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("nodepool not found; drift and consolidation not evaluated", "nodeclaim", nc.Name, "nodepool", name)
			return nil, nil
		}
		return nil, fmt.Errorf("getting nodepool %s: %w", name, err)
	}
	return np, nil
}

// node returns the NodeClaim's Node (named in its status, with its provider ID), or nil when it has not
// registered or is gone. It is the cache's object, not a copy: read only.
func (c *Controller) node(ctx context.Context, nc *karpv1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.NodeName == "" || nc.Status.ProviderID == "" {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.deps.Client.List(ctx, nodes, client.MatchingFields{index.NodeProviderID: nc.Status.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("getting node %s: %w", nc.Status.NodeName, err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Name == nc.Status.NodeName {
			return &nodes.Items[i], nil
		}
	}
	return nil, nil
}

// updateDrifted sets Drifted on a launched NodeClaim that drifted and removes it otherwise. When drift cannot
// be evaluated (an error), the condition keeps its current value.
func (c *Controller) updateDrifted(ctx context.Context, nc *karpv1.NodeClaim, np *karpv1.NodePool) error {
	if !nc.IsTrue(karpv1.ConditionTypeLaunched) {
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDrifted)
		return nil
	}
	node, err := c.node(ctx, nc)
	if err != nil {
		return err
	}
	d, err := c.evaluateDrift(ctx, nc, np, node)
	if err != nil {
		return err
	}
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "node", nc.Status.NodeName, "nodepool", np.Name)
	if d.Reason == "" {
		if meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDrifted) {
			logger.Info("nodeclaim no longer drifted")
		}
		return nil
	}
	if !nc.IsTrue(karpv1.ConditionTypeDrifted) {
		logger.Info("nodeclaim drifted", "reason", d.Reason, "message", d.Message)
	}
	c.setTrue(nc, karpv1.ConditionTypeDrifted, d.Reason, d.Message)
	return nil
}

// updateConsolidatable sets Consolidatable once consolidateAfter has passed and removes it otherwise.
func (c *Controller) updateConsolidatable(nc *karpv1.NodeClaim, cons consolidation) {
	if !cons.Consolidatable() {
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
		return
	}
	c.setTrue(nc, karpv1.ConditionTypeConsolidatable, ReasonConsolidatable,
		fmt.Sprintf("no pod scheduled to or removed from the node since %s, longer than consolidateAfter (%s)",
			cons.Since.UTC().Format(time.RFC3339), cons.After))
}

// setTrue sets a True condition stamped with the injected clock. Drifted and Consolidatable do not take part in
// the root Ready condition, so Ready is left alone.
func (c *Controller) setTrue(nc *karpv1.NodeClaim, t, reason, message string) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               t,
		Status:             metav1.ConditionTrue,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(c.deps.Clock.Now()),
	})
}

// patchStatus writes nc's conditions if they differ from the stored ones: only the changed conditions, each tested
// to be still as stored (deps.PatchNodeClaimStatus), so that other controllers' conditions written meanwhile do not
// make the write fail.
func (c *Controller) patchStatus(ctx context.Context, storedConditions []metav1.Condition, nc *karpv1.NodeClaim) error {
	if equalConditions(storedConditions, nc.Status.Conditions) {
		return nil
	}
	stored := nc.DeepCopy()
	stored.Status.Conditions = storedConditions
	if err := deps.PatchNodeClaimStatus(ctx, c.deps.Client, stored, nc); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err))
	}
	c.written.Wrote(nc)
	return nil
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// expire deletes a NodeClaim that outlived its expireAfter; the termination controllers drain the node within
// its terminationGracePeriod. Expiration is forceful: budgets and do-not-disrupt do not hold it back.
func (c *Controller) expire(ctx context.Context, nc *karpv1.NodeClaim, exp expiration) error {
	uid := nc.UID
	if err := c.deps.Client.Delete(ctx, nc, client.Preconditions{UID: &uid}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting expired nodeclaim %s: %w", nc.Name, err))
	}
	age := exp.Age.Round(time.Second)
	c.deps.Recorder.Eventf(nc, corev1.EventTypeNormal, ReasonExpired,
		"Deleting NodeClaim: it is %s old, past its expireAfter of %s", age, exp.After)
	log.FromContext(ctx).Info("deleted expired nodeclaim", "nodeclaim", nc.Name, "node", nc.Status.NodeName,
		"nodepool", nc.NodePoolName(), "age", age.String(), "expireAfter", exp.After.String())
	deps.CountDisrupted(ctx, c.deps, nc, metricReasonExpired, "")
	return nil
}

// shortest returns the smallest positive duration, or 0 (no requeue) when there is none.
func shortest(ds []time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// Reconcile runs reconcileOnce. A write rejected for a stale copy (optimistic-lock conflict) is retried after a
// backoff that grows while the conflicts go on (deps.ConflictBackoff) instead of being reported as an error; a
// result with an error drops the result, as controller-runtime does.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcileOnce(ctx, req)
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: c.conflicts.Conflict(req.Name)}, nil
	}
	c.conflicts.Done(req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	return res, nil
}
