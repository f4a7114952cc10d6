package static

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/requirements"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/staticcapacity"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Name is the controller's name in logs and metrics.
const Name = "nodepool.static"

// waitingRequeue re-examines a NodePool whose plan waits on something no watched object signals (a budget's
// schedule window).
const waitingRequeue = 30 * time.Second

// maxInstanceTypes bounds the instance types a NodeClaim lists, as provisioning does.
const maxInstanceTypes = 60

// Reasons of the events on the NodePool.
const (
	EventScaledUp   = "StaticScaledUp"
	EventScaledDown = "StaticScaledDown"
	EventReplacing  = "StaticDriftReplacing"
	EventWaiting    = "StaticWaiting"
	EventNoTypes    = "StaticNoInstanceTypes"
)

// ErrNoInstanceType says no instance type satisfies a static NodePool's requirements with an available offering.
var ErrNoInstanceType = errors.New("no instance type satisfies the nodepool's requirements with an available offering")

// Controller keeps static NodePools at their replicas.
type Controller struct {
	deps deps.Deps
	// reader lists NodeClaims from the API server rather than the cache, so a pass right after a create or a
	// delete does not act on a listing that misses it (and create or delete twice).
	reader client.Reader
}

// NewController returns the controller; it lists NodeClaims through d.Client until Register gives it the
// manager's API reader.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d, reader: d.Client} }

// Register adds the controller: static NodePools, and changes of their NodeClaims.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	c.reader = m.GetAPIReader()
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.(*karpv1.NodePool).IsStatic()
		}))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[karpv1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})).
		Complete(c)
}

// Reconcile brings one static NodePool one step closer to its replicas.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, Name)
	logger := log.FromContext(ctx).WithValues("nodepool", req.Name)
	np := &karpv1.NodePool{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("getting nodepool: %w", err))
	}
	if !np.IsStatic() || !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.reader.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	in, err := c.input(ctx, np, list.Items)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan := staticcapacity.Decide(in)
	byName := map[string]*karpv1.NodeClaim{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var errs []error
	if plan.Create > 0 {
		if err := c.create(ctx, logger, np, plan); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range plan.Delete {
		nc := byName[d.Name]
		if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", d.Name, err))
			continue
		}
		reason := "scale-down"
		if d.TerminateFirst {
			reason = string(d.Reason) + ", terminate-first: limits.nodes leaves no room to replace it first"
		} else if d.Reason != "" {
			reason = string(d.Reason)
		}
		if d.Reason != "" {
			deps.CountDisrupted(ctx, c.deps, nc, strings.ToLower(string(karpv1.DisruptionReasonDrifted)), "")
		}
		if d.TerminateFirst && c.deps.Metrics != nil {
			c.deps.Metrics.TerminateFirstDecisions.WithLabelValues(np.Name, strings.ToLower(string(d.Reason)), disruption.TerminateFirstStaticAtLimit).Inc()
		}
		logger.Info("deleted nodeclaim of static nodepool", "nodeclaim", d.Name, "reason", reason, "replicas", in.Replicas)
		c.deps.Recorder.Eventf(np, corev1.EventTypeNormal, EventScaledDown, "Deleted nodeclaim %s (%s), replicas %d", d.Name, reason, in.Replicas)
	}
	if len(errs) > 0 {
		return reconcile.Result{}, errors.Join(errs...)
	}
	if plan.Waiting != "" {
		logger.V(1).Info("static nodepool waits", "reason", plan.Waiting)
		c.deps.Recorder.Event(np, corev1.EventTypeNormal, EventWaiting, plan.Waiting)
		return reconcile.Result{RequeueAfter: waitingRequeue}, nil
	}
	return reconcile.Result{}, nil
}

// input describes the NodePool and its NodeClaims for the plan.
func (c *Controller) input(ctx context.Context, np *karpv1.NodePool, claims []karpv1.NodeClaim) (staticcapacity.Input, error) {
	in := staticcapacity.Input{Replicas: int(*np.Spec.Replicas)}
	if q, ok := np.Spec.Limits[corev1.ResourceName("nodes")]; ok {
		n := int(q.Value())
		in.NodeLimit = &n
	}
	deleting := 0
	for i := range claims {
		nc := &claims[i]
		cl := staticcapacity.Claim{
			Name:        nc.Name,
			Deleting:    !nc.DeletionTimestamp.IsZero(),
			Initialized: nc.IsTrue(karpv1.ConditionTypeInitialized),
			Drifted:     nc.IsTrue(karpv1.ConditionTypeDrifted),
			CreatedAt:   nc.CreationTimestamp.Time,
		}
		if cl.Deleting {
			deleting++
		}
		if name := nc.Status.NodeName; name != "" && !cl.Deleting {
			if err := c.describeNode(ctx, name, &cl); err != nil {
				return in, err
			}
		}
		in.Claims = append(in.Claims, cl)
	}
	allowed, err := disruption.AllowedDisruptions(np, c.deps.Clock.Now(), len(claims), deleting)
	if err != nil {
		return in, fmt.Errorf("reading disruption budgets: %w", err)
	}
	in.Allowed = allowed
	// The replacement of a node terminated first is created by this controller, which creates for a NodePool that
	// is ready only.
	in.TerminateFirst = c.deps.Settings != nil && c.deps.Settings.FeatureEnabled(settings.FeatureTerminateFirstDrift) &&
		np.IsTrue(karpv1.ConditionTypeReady) && np.DeletionTimestamp.IsZero()
	return in, nil
}

// describeNode counts the pods a deletion of the node would evict and notes do-not-disrupt.
func (c *Controller) describeNode(ctx context.Context, name string, cl *staticcapacity.Claim) error {
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: name}, node); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("getting node %s: %w", name, err)
	}
	if node.Annotations[karpv1.DoNotDisruptAnnotationKey] == karpv1.DoNotDisruptValue {
		cl.DoNotDisrupt = true
	}
	pods := &corev1.PodList{}
	if err := c.deps.Client.List(ctx, pods, client.MatchingFields{index.PodNodeName: name}); err != nil {
		return fmt.Errorf("listing pods on node %s: %w", name, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !disruption.Reschedulable(p) {
			continue
		}
		cl.Pods++
		if termination.HasDoNotDisrupt(p, c.deps.Clock.Now()) {
			cl.DoNotDisrupt = true
		}
	}
	return nil
}

// create creates plan.Create NodeClaims from the NodePool's template.
func (c *Controller) create(ctx context.Context, logger logr.Logger, np *karpv1.NodePool, plan staticcapacity.Plan) error {
	its, err := c.deps.CloudProvider.GetInstanceTypes(ctx, np)
	if err != nil {
		return fmt.Errorf("listing instance types: %w", err)
	}
	reqs := Requirements(np, its)
	if reqs == nil {
		c.deps.Recorder.Event(np, corev1.EventTypeWarning, EventNoTypes, ErrNoInstanceType.Error())
		return fmt.Errorf("nodepool %s: %w", np.Name, ErrNoInstanceType)
	}
	// The template's hash as of this NodePool, not its annotation, which the hash controller may not have
	// updated yet after a template change: a drift replacement must not carry the old hash and drift in turn.
	np = np.DeepCopy()
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[karpv1.NodePoolHashAnnotationKey] = hashversion.NodePool(np)
	np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = hashversion.NodePoolVersion
	var errs []error
	for i := 0; i < plan.Create; i++ {
		nc := solver.BuildNodeClaim(solver.NewNodeClaim{NodePool: np, Requirements: reqs})
		if err := c.deps.Client.Create(ctx, nc); err != nil {
			errs = append(errs, fmt.Errorf("creating nodeclaim: %w", err))
			continue
		}
		c.deps.Metrics.CountNodeClaimCreated(metrics.ReasonProvisioned, np.Name, nc)
		why, event := "scale-up", EventScaledUp
		if i < plan.CreateForDrift {
			why, event = "drift replacement", EventReplacing
		}
		logger.Info("created nodeclaim for static nodepool", "nodeclaim", nc.Name, "reason", why, "replicas", *np.Spec.Replicas)
		c.deps.Recorder.Eventf(np, corev1.EventTypeNormal, event, "Created nodeclaim %s (%s), replicas %d", nc.Name, why, *np.Spec.Replicas)
	}
	return errors.Join(errs...)
}

// Requirements returns a static NodeClaim's requirements: the template's, plus the instance types (cheapest
// first, at most maxInstanceTypes) whose labels satisfy them and that have an available offering in an allowed
// zone and capacity type. It returns nil when no type qualifies.
func Requirements(np *karpv1.NodePool, its []*cloudprovider.InstanceType) []karpv1.NodeSelectorRequirementWithMinValues {
	var reqs []corev1.NodeSelectorRequirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, r.NodeSelectorRequirement)
	}
	type priced struct {
		name  string
		price float64
	}
	var ok []priced
	for _, it := range its {
		if !requirements.Allows(reqs, corev1.LabelInstanceTypeStable, it.Name) ||
			!requirements.Matches(reqs, it.Labels, func(key string) bool { _, has := it.Labels[key]; return has }) {
			continue
		}
		best := -1.0
		for _, o := range it.Offerings {
			if !o.Available || !requirements.Allows(reqs, corev1.LabelTopologyZone, o.Zone) ||
				!requirements.Allows(reqs, karpv1.CapacityTypeLabelKey, o.CapacityType) {
				continue
			}
			if best < 0 || o.Price < best {
				best = o.Price
			}
		}
		if best >= 0 {
			ok = append(ok, priced{it.Name, best})
		}
	}
	if len(ok) == 0 {
		return nil
	}
	sort.SliceStable(ok, func(i, j int) bool {
		if ok[i].price != ok[j].price {
			return ok[i].price < ok[j].price
		}
		return ok[i].name < ok[j].name
	})
	if len(ok) > maxInstanceTypes {
		ok = ok[:maxInstanceTypes]
	}
	names := make([]string, len(ok))
	for i, p := range ok {
		names[i] = p.name
	}
	out := append([]karpv1.NodeSelectorRequirementWithMinValues(nil), np.Spec.Template.Spec.Requirements...)
	return append(out, karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...))
}
