package status

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclass.status"

// Condition and reasons this controller sets besides the readiness conditions of the API.
const (
	// ConditionTypeTerminating is True while a deleted EC2NodeClass waits for the NodeClaims that use it.
	ConditionTypeTerminating  = "Terminating"
	ReasonWaitingOnNodeClaims = "WaitingOnNodeClaims"
	ReasonCleaningUp          = "CleaningUp"
	ReasonResolutionFailed    = "ResolutionFailed"
	ReasonNotSupported        = "NotSupported"
	// ReasonReservedCapacityDisabled: the node class selects capacity reservations but the ReservedCapacity
	// feature gate is off, so they are not used.
	ReasonReservedCapacityDisabled = "ReservedCapacityDisabled"
)

// Requeue intervals: a resolved class's instance profile and capacity reservations are refreshed every
// resyncPeriod (its AMIs, subnets and security groups on the intervals of the settings, see refresh.go); failures
// sooner.
const (
	resyncPeriod  = 5 * time.Minute
	retryPeriod   = 30 * time.Second
	waitingPeriod = 15 * time.Second
)

// Resolver is what this controller needs from the cloud provider to resolve and clean up an EC2NodeClass.
// The AWS provider (pkg/providers/aws) implements it.
type Resolver interface {
	ResolveSubnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error)
	ResolveSecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error)
	ResolveAMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error)
	ResolveInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error)
	ResolveCapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error)
	// ReservedCapacityEnabled reports whether the ReservedCapacity feature gate is on.
	ReservedCapacityEnabled() bool
	ValidateNodeClass(ctx context.Context, nc *awsv1.EC2NodeClass) error
	DeleteNodeClassResources(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

// Controller keeps EC2NodeClass status (subnets, security groups, AMIs, instance profile, conditions) current
// and runs the karpenter.k8s.aws/termination finalizer.
type Controller struct {
	deps      deps.Deps
	resolver  Resolver
	intervals map[string]time.Duration
	refreshed *refreshes
	// validations keeps the launch dry runs' outcomes (dryrun.go).
	validations *validations
}

// NewController returns the controller, taking the resolver from the cloud provider in d (unwrapping the
// metrics instrumentation). Register fails when the cloud provider cannot resolve EC2NodeClasses.
func NewController(d deps.Deps) *Controller {
	return New(d, resolverOf(d.CloudProvider))
}

// New returns the controller with an explicit resolver (tests, other wiring).
func New(d deps.Deps, r Resolver) *Controller {
	return &Controller{deps: d, resolver: r, intervals: refreshIntervals(d.Settings), refreshed: &refreshes{}, validations: &validations{}}
}

func resolverOf(cp cloudprovider.CloudProvider) Resolver {
	r, _ := cloudprovider.Find[Resolver](cp)
	return r
}

// Register adds the controller to the manager; it watches EC2NodeClasses and the deletion of the NodeClaims
// that use them.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.resolver == nil {
		return fmt.Errorf("%s: the cloud provider cannot resolve EC2NodeClasses", Name)
	}
	return builder.ControllerManagedBy(m).Named(Name).
		For(&awsv1.EC2NodeClass{}).
		Watches(&karpv1.NodeClaim{}, nodeClaimDeletions()).
		Complete(deps.RetryTransient(c))
}

// nodeClaimDeletions enqueues the EC2NodeClass of a NodeClaim that is gone: the class's finalizer waits for
// its last NodeClaim. Other NodeClaim changes leave the class alone (as Karpenter's controller does): resolving
// the class again on each of them re-ran every resolution thousands of times in a 1,000-node scale-out.
func nodeClaimDeletions() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.Funcs{
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if nc, ok := e.Object.(*karpv1.NodeClaim); ok && refersToNodeClass(nc) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}})
			}
		},
	}
}

func refersToNodeClass(nc *karpv1.NodeClaim) bool {
	r := nc.Spec.NodeClassRef
	return r != nil && r.Group == awsv1.Group && r.Kind == "EC2NodeClass"
}

// Reconcile resolves one EC2NodeClass into its status, or runs its finalizer when it is being deleted.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, Name)
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("ec2nodeclass", req.Name))
	nc := &awsv1.EC2NodeClass{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.refreshed.forget(req.Name)
			c.validations.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		orig := nc.DeepCopy()
		controllerutil.AddFinalizer(nc, awsv1.TerminationFinalizer)
		if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	orig := nc.DeepCopy()
	now := c.now()
	due := c.refreshed.due(nc, now, c.intervals)
	// A part whose condition this copy does not show as True for this generation is resolved again whatever its
	// schedule: the copy may be older than the last status written (the cache lags behind a status patch), and the
	// status patch writes every condition of this copy back.
	for part, conditions := range partConditions() {
		for _, t := range conditions {
			if cond := meta.FindStatusCondition(nc.Status.Conditions, t); cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != nc.Generation {
				due[part] = true
			}
		}
	}
	resolved, failed := c.resolve(ctx, nc, due)
	if !equality.Semantic.DeepEqual(orig.Status, nc.Status) {
		if err := c.deps.Client.Status().Patch(ctx, nc, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	c.refreshed.record(nc, now, resolved)
	if failed {
		return reconcile.Result{RequeueAfter: retryPeriod}, nil
	}
	return reconcile.Result{RequeueAfter: c.refreshed.next(nc, now, c.intervals)}, nil
}

func (c *Controller) now() time.Time {
	if c.deps.Clock == nil {
		return time.Now()
	}
	return c.deps.Clock.Now()
}

// resolve fills the status and its conditions, resolving only the parts that are due (the others keep what the
// status holds); it returns the due parts resolved without error, and whether anything failed.
func (c *Controller) resolve(ctx context.Context, nc *awsv1.EC2NodeClass, due map[string]bool) ([]string, bool) {
	failed := false
	partFailed := map[string]bool{}
	step := func(part, condition, notFoundReason string, run func() error) {
		if !due[part] {
			return
		}
		err := run()
		switch {
		case err == nil:
			nc.SetTrue(condition, karpv1.ReasonReady)
		case cloudprovider.IsThrottled(err):
			failed, partFailed[part] = true, true
			nc.SetCondition(condition, metav1.ConditionUnknown, ReasonResolutionFailed, err.Error())
		default:
			failed, partFailed[part] = true, true
			reason := notFoundReason
			if !isNoMatch(err) {
				reason = ReasonResolutionFailed
			}
			log.FromContext(ctx).Info("resolving EC2NodeClass failed", "condition", condition, "error", err.Error())
			nc.SetFalse(condition, reason, err.Error())
		}
	}
	step(partSubnets, awsv1.ConditionTypeSubnetsReady, awsv1.ReasonSubnetsNotFound, func() error {
		s, err := c.resolver.ResolveSubnets(ctx, nc)
		if err == nil || isNoMatch(err) {
			nc.Status.Subnets = s
		}
		return err
	})
	step(partSecurityGroups, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ReasonSecurityGroupsNotFound, func() error {
		g, err := c.resolver.ResolveSecurityGroups(ctx, nc)
		if err == nil || isNoMatch(err) {
			nc.Status.SecurityGroups = g
		}
		return err
	})
	step(partAMIs, awsv1.ConditionTypeAMIsReady, awsv1.ReasonAMINotFound, func() error {
		a, err := c.resolver.ResolveAMIs(ctx, nc)
		if err == nil || isNoMatch(err) {
			nc.Status.AMIs = a
		}
		return err
	})
	var profileErr error
	step(partOther, awsv1.ConditionTypeInstanceProfileReady, awsv1.ReasonInstanceProfileError, func() error {
		name, err := c.resolver.ResolveInstanceProfile(ctx, nc)
		if err == nil {
			nc.Status.InstanceProfile = name
		}
		profileErr = err
		return err
	})
	switch {
	case len(nc.Spec.CapacityReservationSelectorTerms) == 0:
		nc.Status.CapacityReservations = nil
		nc.SetTrue(awsv1.ConditionTypeCapacityReservationsReady, karpv1.ReasonReady)
	case !c.resolver.ReservedCapacityEnabled():
		nc.Status.CapacityReservations = nil
		nc.SetCondition(awsv1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, ReasonReservedCapacityDisabled,
			"the ReservedCapacity feature gate is off: capacityReservationSelectorTerms are ignored and nodes launch as on-demand or spot")
	default:
		step(partOther, awsv1.ConditionTypeCapacityReservationsReady, awsv1.ReasonCapacityReservationErr, func() error {
			rs, err := c.resolver.ResolveCapacityReservations(ctx, nc)
			if err == nil {
				nc.Status.CapacityReservations = rs
			}
			return err
		})
	}
	c.placementGroup(ctx, nc)
	if awsv1.ValidationReason(profileErr) == awsv1.ReasonInstanceProfileNotFound {
		nc.SetFalse(awsv1.ConditionTypeValidationSucceeded, awsv1.ReasonInstanceProfileNotFound, profileErr.Error())
	} else if err := c.resolver.ValidateNodeClass(ctx, nc); err != nil {
		reason := awsv1.ValidationReason(err)
		if reason == "" {
			reason = karpv1.ReasonValidationFailed
		}
		nc.SetFalse(awsv1.ConditionTypeValidationSucceeded, reason, err.Error())
	} else if c.validateLaunch(ctx, nc) {
		failed = true
	}
	var resolved []string
	for _, part := range []string{partSubnets, partSecurityGroups, partAMIs, partOther} {
		if due[part] && !partFailed[part] {
			resolved = append(resolved, part)
		}
	}
	return resolved, failed
}

// finalize keeps the finalizer while NodeClaims use the class; then deletes the class's AWS resources and
// removes the finalizer.
func (c *Controller) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var users []string
	for i := range claims.Items {
		if refersToNodeClass(&claims.Items[i]) && claims.Items[i].Spec.NodeClassRef.Name == nc.Name {
			users = append(users, claims.Items[i].Name)
		}
	}
	orig := nc.DeepCopy()
	if len(users) > 0 {
		sort.Strings(users)
		msg := fmt.Sprintf("waiting for %d NodeClaim(s) using this EC2NodeClass to be deleted: %s", len(users), nameList(users, 10))
		nc.SetCondition(ConditionTypeTerminating, metav1.ConditionTrue, ReasonWaitingOnNodeClaims, msg)
		if err := c.patchStatus(ctx, orig, nc); err != nil {
			return reconcile.Result{}, err
		}
		if c.deps.Recorder != nil && !equality.Semantic.DeepEqual(orig.Status.Conditions, nc.Status.Conditions) {
			c.deps.Recorder.Event(nc, corev1.EventTypeNormal, karpv1.EventReasonWaitingOnNodeClaimTermination, msg)
		}
		return reconcile.Result{RequeueAfter: waitingPeriod}, nil
	}
	nc.SetCondition(ConditionTypeTerminating, metav1.ConditionTrue, ReasonCleaningUp, "deleting launch templates and the instance profile Dovetail created")
	if err := c.patchStatus(ctx, orig, nc); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.resolver.DeleteNodeClassResources(ctx, nc); err != nil {
		if c.deps.Recorder != nil {
			c.deps.Recorder.Event(nc, corev1.EventTypeWarning, "CleanupFailed", err.Error())
		}
		return reconcile.Result{}, fmt.Errorf("deleting AWS resources of EC2NodeClass %s: %w", nc.Name, err)
	}
	before := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, awsv1.TerminationFinalizer)
	if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.validations.forget(nc.Name)
	log.FromContext(ctx).Info("removed finalizer after cleaning up AWS resources")
	return reconcile.Result{}, nil
}

func (c *Controller) patchStatus(ctx context.Context, orig, nc *awsv1.EC2NodeClass) error {
	if equality.Semantic.DeepEqual(orig.Status, nc.Status) {
		return nil
	}
	return client.IgnoreNotFound(c.deps.Client.Status().Patch(ctx, nc, client.MergeFrom(orig)))
}

func nameList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

// isNoMatch reports whether err says selector terms matched nothing (as opposed to an AWS failure).
func isNoMatch(err error) bool {
	var nm interface{ NoMatch() bool }
	return errors.As(err, &nm) && nm.NoMatch()
}

// PlacementGroupResolver is what the controller needs from the cloud provider to resolve spec.placementGroupSelector:
// the id of the available group it names (an error with NoMatch() true when there is none).
type PlacementGroupResolver interface {
	PlacementGroupID(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error)
}

// Reasons of PlacementGroupReady, as Karpenter writes them.
const (
	ReasonPlacementGroupNotFound         = "PlacementGroupNotFound"
	ReasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)

// placementGroup sets PlacementGroupReady: true without a selector or when the selected group is available.
func (c *Controller) placementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		meta.RemoveStatusCondition(&nc.Status.Conditions, awsv1.ConditionTypePlacementGroupReady)
		return
	}
	r, ok := c.resolver.(PlacementGroupResolver)
	if !ok {
		nc.SetFalse(awsv1.ConditionTypePlacementGroupReady, ReasonNotSupported, "this cloud provider does not resolve placementGroupSelector")
		return
	}
	name := sel.Name
	if name == "" {
		name = sel.ID
	}
	id, err := r.PlacementGroupID(ctx, nc)
	switch {
	case err == nil:
		nc.SetTrue(awsv1.ConditionTypePlacementGroupReady, karpv1.ReasonReady)
		log.FromContext(ctx).V(1).Info("resolved placement group", "placement-group", name, "placement-group-id", id)
	case isNoMatch(err):
		nc.SetFalse(awsv1.ConditionTypePlacementGroupReady, ReasonPlacementGroupNotFound, fmt.Sprintf("Placement group %q not found", name))
	default:
		log.FromContext(ctx).Info("resolving placement group failed", "placement-group", name, "error", err.Error())
		nc.SetFalse(awsv1.ConditionTypePlacementGroupReady, ReasonPlacementGroupResolutionFailed,
			fmt.Sprintf("Failed to resolve placement group %q: %s", name, err.Error()))
	}
}
