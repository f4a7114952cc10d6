package health

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/repair"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Name is the controller's name in logs and metrics.
const Name = "node.health"

// Event reasons (Karpenter's names).
const (
	// ReasonNodeRepairBlocked is a Warning on a Node whose repair is held back by the safety limit.
	ReasonNodeRepairBlocked = karpv1.EventReasonNodeRepairBlocked
	// ReasonDisruptionTerminating is a Normal event on the Node and NodeClaim of a repaired node.
	ReasonDisruptionTerminating = "DisruptionTerminating"
)

// MetricReasonUnhealthy is the reason label of karpenter_nodeclaims_disrupted_total for a repaired node.
const MetricReasonUnhealthy = karpv1.MetricReasonUnhealthy

// Controller repairs unhealthy nodes.
type Controller struct {
	deps deps.Deps
	// staticOnly limits the controller to the nodes of static NodePools (see NewStaticController).
	staticOnly bool
}

// NewController returns the controller. controllers.New includes it when the NodeRepair gate is on with
// LEGACY_NODE_REPAIR.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// NewStaticController returns the controller for the nodes of static NodePools only: with node repair a method of
// the disruption controller (NodeRepair without LEGACY_NODE_REPAIR), a static NodePool's nodes are no disruption
// candidates, and this controller repairs them as before; the static NodePool controller then refills the pool.
func NewStaticController(d deps.Deps) *Controller { return &Controller{deps: d, staticOnly: true} }

// Policies are the cloud provider's repair policies with NODE_REPAIR_TOLERATIONS applied; an override naming a
// condition no policy watches is an error, so the controller does not start with a setting that does nothing.
func Policies(cp cloudprovider.CloudProvider, overrides map[string]time.Duration) ([]cloudprovider.RepairPolicy, error) {
	p, err := repair.WithTolerations(cp.RepairPolicies(), overrides)
	if err != nil {
		return nil, fmt.Errorf("NODE_REPAIR_TOLERATIONS (--node-repair-tolerations): %w", err)
	}
	return p, nil
}

// Register adds the controller, watching Nodes whose conditions change.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if _, err := Policies(c.deps.CloudProvider, c.overrides()); err != nil {
		return err
	}
	return builder.ControllerManagedBy(m).Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(conditionsChanged)).
		Complete(deps.RetryTransient(c))
}

func (c *Controller) overrides() map[string]time.Duration {
	if c.deps.Settings == nil {
		return nil
	}
	return c.deps.Settings.NodeRepairTolerations
}

// conditionsChanged passes Node creations and updates that change a condition's type, status or transition time
// (not the kubelet's heartbeats).
var conditionsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 || len(o.Status.Conditions) != len(n.Status.Conditions) {
			return true
		}
		for i, oc := range o.Status.Conditions {
			nc := n.Status.Conditions[i]
			if oc.Type != nc.Type || oc.Status != nc.Status || !oc.LastTransitionTime.Equal(&nc.LastTransitionTime) {
				return true
			}
		}
		return false
	},
	DeleteFunc: func(event.DeleteEvent) bool { return false },
}

// Reconcile looks at one Node: nothing when healthy, a requeue at the end of the toleration, a NodeRepairBlocked
// event when its NodePool is over the safety limit, otherwise the repair.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !node.DeletionTimestamp.IsZero() || node.Spec.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	policies, err := Policies(c.deps.CloudProvider, c.overrides())
	if err != nil {
		return reconcile.Result{}, err
	}
	// The node alone first: healthy nodes (nearly every event, kwok and kubelet heartbeats included) and nodes
	// within their toleration cost no list of the NodePool.
	now := c.deps.Clock.Now()
	h := repair.Check(node, policies)
	if !h.Unhealthy {
		return reconcile.Result{}, nil
	}
	if now.Before(h.RepairAt) {
		log.FromContext(ctx).V(1).Info("node unhealthy, within its toleration", "node", node.Name,
			"condition", h.Condition.Type, "status", h.Condition.Status, "repairAt", h.RepairAt)
		return reconcile.Result{RequeueAfter: h.RepairAt.Sub(now)}, nil
	}
	nc, err := c.nodeClaimOf(ctx, node)
	if err != nil || nc == nil || !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, err
	}
	if c.staticOnly {
		np := &karpv1.NodePool{}
		if pool := nc.NodePoolName(); pool == "" || c.deps.Client.Get(ctx, client.ObjectKey{Name: pool}, np) != nil || !np.IsStatic() {
			return reconcile.Result{}, nil
		}
	}
	if node.Annotations[karpv1.DoNotRepairAnnotationKey] == "true" || nc.Annotations[karpv1.DoNotRepairAnnotationKey] == "true" {
		log.FromContext(ctx).V(1).Info("node unhealthy, repair blocked by annotation", "node", node.Name, "nodeclaim", nc.Name,
			"annotation", karpv1.DoNotRepairAnnotationKey, "condition", h.Condition.Type)
		return reconcile.Result{}, nil
	}
	nodes := &corev1.NodeList{}
	var opts []client.ListOption
	if pool := node.Labels[karpv1.NodePoolLabelKey]; pool != "" {
		opts = append(opts, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	}
	if err := c.deps.Client.List(ctx, nodes, opts...); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	in := repair.Input{Now: now, Policies: policies}
	for i := range nodes.Items {
		in.Nodes = append(in.Nodes, &nodes.Items[i])
	}
	d, ok := repair.DecideNode(in, node.Name)
	if !ok {
		// The cache's list lags the Get: look again shortly.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	logger := log.FromContext(ctx).WithValues("node", node.Name, "nodeclaim", nc.Name, "nodepool", d.Group.NodePool)
	switch d.Verdict {
	case repair.Tolerated:
		return reconcile.Result{RequeueAfter: d.Recheck.Sub(in.Now)}, nil
	case repair.HeldBack:
		logger.Info("node repair held back", "condition", d.Health.Condition.Type, "unhealthy", d.Group.Unhealthy,
			"nodes", d.Group.Nodes, "allowed", d.Group.Allowed)
		// On the Node, its NodeClaim and its NodePool, as Karpenter.
		c.deps.Recorder.Event(node, corev1.EventTypeWarning, ReasonNodeRepairBlocked, d.Group.LimitMessage())
		c.deps.Recorder.Event(nc, corev1.EventTypeWarning, ReasonNodeRepairBlocked, d.Group.LimitMessage())
		if np := (&karpv1.NodePool{}); d.Group.NodePool != "" && c.deps.Client.Get(ctx, client.ObjectKey{Name: d.Group.NodePool}, np) == nil {
			c.deps.Recorder.Event(np, corev1.EventTypeWarning, ReasonNodeRepairBlocked, d.Group.LimitMessage())
		}
		return reconcile.Result{RequeueAfter: d.Recheck.Sub(in.Now)}, nil
	case repair.Repair:
		if msg, err := c.budgetBlocks(ctx, nc, in.Now); err != nil || msg != "" {
			if err != nil {
				return reconcile.Result{}, err
			}
			logger.Info("node repair held back by the disruption budget", "condition", d.Health.Condition.Type)
			c.deps.Recorder.Event(node, corev1.EventTypeWarning, ReasonNodeRepairBlocked, msg)
			return reconcile.Result{RequeueAfter: repair.HeldBackRecheck}, nil
		}
		return reconcile.Result{}, c.repair(ctx, node, nc, d)
	}
	return reconcile.Result{}, nil
}

// budgetBlocks returns why the NodePool's disruption budgets allow no repair of nc now ("" when they allow it):
// the budgets naming the reason Unhealthy, or no reason, limit how many of the pool's nodes may be disrupting at
// once (Karpenter v1.15). A NodeClaim not yet initialized runs no workload and needs no budget.
func (c *Controller) budgetBlocks(ctx context.Context, nc *karpv1.NodeClaim, now time.Time) (string, error) {
	pool := nc.NodePoolName()
	if pool == "" || !nc.IsTrue(karpv1.ConditionTypeInitialized) {
		return "", nil
	}
	np := &karpv1.NodePool{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return "", fmt.Errorf("listing nodeclaims of nodepool %s: %w", pool, err)
	}
	disrupting := 0
	for i := range claims.Items {
		if !claims.Items[i].DeletionTimestamp.IsZero() {
			disrupting++
		}
	}
	allowed, err := disruption.AllowedRepairs(np, now, len(claims.Items), disrupting)
	if err != nil {
		return "", err
	}
	if allowed > 0 {
		return "", nil
	}
	return fmt.Sprintf("repair held back: the disruption budgets of NodePool %s allow no more disruption for reason Unhealthy now (%d of %d nodes disrupting)",
		pool, disrupting, len(claims.Items)), nil
}

// repair stamps the NodeClaim's termination deadline with now, so the drain deletes every pod at once without
// waiting for PodDisruptionBudgets or do-not-disrupt, and deletes the NodeClaim.
func (c *Controller) repair(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim, d repair.Decision) error {
	now := c.deps.Clock.Now()
	if err := c.stampDeadline(ctx, nc, now); err != nil {
		return err
	}
	if err := c.deps.Client.Delete(ctx, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting nodeclaim %s of unhealthy node %s: %w", nc.Name, node.Name, err)
	}
	log.FromContext(ctx).Info("deleting unhealthy node", "node", node.Name, "nodeclaim", nc.Name,
		"condition", d.Health.Condition.Type, "status", d.Health.Condition.Status, "since", d.Health.Since,
		"toleration", d.Health.Policy.TolerationDuration)
	msg := "Disrupting: Unhealthy: " + d.Message()
	c.deps.Recorder.Event(node, corev1.EventTypeNormal, ReasonDisruptionTerminating, msg)
	c.deps.Recorder.Event(nc, corev1.EventTypeNormal, ReasonDisruptionTerminating, msg)
	if m := c.deps.Metrics; m != nil {
		pool, ct := nc.NodePoolName(), nc.Labels[karpv1.CapacityTypeLabelKey]
		deps.CountDisrupted(ctx, c.deps, nc, MetricReasonUnhealthy, "")
		m.NodeClaimsUnhealthyDisrupted.WithLabelValues(SnakeCase(string(d.Health.Condition.Type)), pool, ct, nc.Status.ImageID).Inc()
	}
	return nil
}

// stampDeadline sets karpenter.sh/nodeclaim-termination-timestamp to now unless it already holds a time no later
// than now (a deadline in the past already forces the drain).
func (c *Controller) stampDeadline(ctx context.Context, nc *karpv1.NodeClaim, now time.Time) error {
	if v, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := termination.ParseDeadline(v); err == nil && !t.After(now) {
			return nil
		}
	}
	orig := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = termination.FormatDeadline(now)
	if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("stamping the termination deadline of nodeclaim %s: %w", nc.Name, err))
	}
	return nil
}

// nodeClaimOf returns the NodeClaim whose instance the Node is, or nil for a Node Dovetail did not launch.
func (c *Controller) nodeClaimOf(ctx context.Context, node *corev1.Node) (*karpv1.NodeClaim, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of node %s: %w", node.Name, err)
	}
	if len(list.Items) != 1 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// SnakeCase turns a condition type into the condition label's form: AcceleratedHardwareReady ->
// accelerated_hardware_ready.
func SnakeCase(s string) string { return repair.ConditionLabel(s) }
