// Package nodeoverlay runs the NodeOverlay controller: it evaluates every NodeOverlay against every NodePool's
// instance types (pkg/overlay), hands the applied ones to the overlay store the cloud provider serves instance
// types through, and reports each overlay's ValidationSucceeded and Ready conditions. With the NodeOverlay
// feature gate off it only reports that overlays are ignored.
package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/overlay"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeoverlay"

// Resync is how often the overlays are evaluated again without any change to them, NodePools or node classes:
// the cloud's instance types and prices change by themselves.
const Resync = 5 * time.Minute

// PoolRetry is how soon the evaluation is repeated when a NodePool's instance types could not be listed.
const PoolRetry = 30 * time.Second

// all is the single key every event maps to: one reconcile evaluates every overlay.
var all = reconcile.Request{NamespacedName: types.NamespacedName{Name: "nodeoverlays"}}

// GateOffMessage is the ValidationSucceeded message of every overlay while the gate is off.
const GateOffMessage = "the NodeOverlay feature gate is off (FEATURE_GATES NodeOverlay=true turns it on): this overlay is ignored"

// Controller evaluates NodeOverlays.
type Controller struct {
	deps deps.Deps
	// raw serves the cloud's instance types without overlays.
	raw cloudprovider.CloudProvider
	// gateOffLogged makes the "overlays are ignored" log line appear once per process.
	gateOffLogged sync.Once
}

// NewController returns the controller. With the gate on, d.CloudProvider must contain an overlay.CloudProvider
// (see overlay.Wrap); its wrapped provider is the one overlays are evaluated against.
func NewController(d deps.Deps) *Controller {
	c := &Controller{deps: d}
	if w, ok := cloudprovider.Find[*overlay.CloudProvider](d.CloudProvider); ok {
		c.raw = w.Unwrap()
	}
	return c
}

func (c *Controller) enabled() bool { return c.deps.Overlays != nil }

// Register adds the controller. Without the NodeOverlay CRD in the API server it fails when the gate is on and
// stays out of the way (logging why) when it is off.
func (c *Controller) Register(ctx context.Context, m manager.Manager) error {
	gvk := karpv1alpha1.SchemeGroupVersion.WithKind("NodeOverlay")
	if _, err := m.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if !apierrors.IsNoMatchError(err) {
			return fmt.Errorf("looking up the NodeOverlay API: %w", err)
		}
		if c.enabled() {
			return fmt.Errorf("FEATURE_GATES has NodeOverlay=true but the API server does not serve %s (install the CRD karpenter.sh_nodeoverlays.yaml): %w", gvk, err)
		}
		log.FromContext(ctx).Info("the NodeOverlay CRD is not installed; the NodeOverlay feature gate is off, so nothing needs it")
		return nil
	}
	if c.enabled() && c.raw == nil {
		return fmt.Errorf("%s: the cloud provider does not serve instance types through the overlay store", Name)
	}
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{all}
	})
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &karpv1alpha1.NodeOverlay{}}
	b := builder.ControllerManagedBy(m).Named(Name).
		Watches(&karpv1alpha1.NodeOverlay{}, toAll).
		WatchesRawSource(source.Channel(start, toAll)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	if c.enabled() {
		// NodePool status changes (counts, resources) do not change instance types: spec changes only.
		b = b.Watches(&karpv1.NodePool{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&awsv1.EC2NodeClass{}, toAll)
	}
	return b.Complete(deps.RetryTransient(c))
}

// Reconcile evaluates every overlay (gate on) or marks them ignored (gate off).
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, Name)
	logger := log.FromContext(ctx)
	list := &karpv1alpha1.NodeOverlayList{}
	if err := c.deps.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeOverlays: %w", err)
	}
	if !c.enabled() {
		if len(list.Items) > 0 {
			c.gateOffLogged.Do(func() {
				logger.Info("NodeOverlays are ignored: the NodeOverlay feature gate is off", "nodeoverlays", len(list.Items))
			})
		}
		verdicts := map[string]overlay.Verdict{}
		for _, o := range list.Items {
			verdicts[o.Name] = overlay.Verdict{Reason: karpv1alpha1.ReasonFeatureGateDisabled, Message: GateOffMessage}
		}
		return reconcile.Result{}, c.writeStatus(ctx, list.Items, verdicts)
	}
	if len(list.Items) == 0 {
		// Nothing to evaluate: no need to list every NodePool's instance types.
		c.deps.Overlays.Set(nil)
		return reconcile.Result{}, nil
	}
	pools, incomplete, err := c.pools(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	applied, verdicts := overlay.Evaluate(list.Items, pools)
	c.deps.Overlays.Set(applied)
	names := make([]string, 0, len(applied))
	for _, o := range applied {
		names = append(names, o.Name)
	}
	logger.V(1).Info("evaluated NodeOverlays", "applied", names, "nodeoverlays", len(list.Items), "nodepools", len(pools))
	if err := c.writeStatus(ctx, list.Items, verdicts); err != nil {
		return reconcile.Result{}, err
	}
	if incomplete {
		return reconcile.Result{RequeueAfter: PoolRetry}, nil
	}
	return reconcile.Result{RequeueAfter: Resync}, nil
}

// pools lists the NodePools with their instance types. A NodePool whose instance types cannot be listed (its node
// class not ready) is left out and reported as incomplete.
func (c *Controller) pools(ctx context.Context) ([]overlay.Pool, bool, error) {
	npList := &karpv1.NodePoolList{}
	if err := c.deps.Client.List(ctx, npList); err != nil {
		return nil, false, fmt.Errorf("listing NodePools: %w", err)
	}
	sort.Slice(npList.Items, func(i, j int) bool { return npList.Items[i].Name < npList.Items[j].Name })
	var out []overlay.Pool
	incomplete := false
	for i := range npList.Items {
		np := &npList.Items[i]
		if !np.DeletionTimestamp.IsZero() {
			continue
		}
		its, err := c.raw.GetInstanceTypes(ctx, np)
		if err != nil {
			if cloudprovider.IsThrottled(err) {
				return nil, false, err
			}
			log.FromContext(ctx).V(1).Info("NodePool left out of the NodeOverlay evaluation", "nodepool", np.Name, "error", err.Error())
			incomplete = true
			continue
		}
		out = append(out, overlay.Pool{NodePool: np, InstanceTypes: its})
	}
	return out, incomplete, nil
}

// writeStatus sets each overlay's conditions from its verdict and patches the ones that changed.
func (c *Controller) writeStatus(ctx context.Context, overlays []karpv1alpha1.NodeOverlay, verdicts map[string]overlay.Verdict) error {
	var errs []error
	for i := range overlays {
		o := &overlays[i]
		stored := o.DeepCopy()
		v := verdicts[o.Name]
		o.SetValidation(v.Reason, v.Message)
		if equality.Semantic.DeepEqual(stored.Status, o.Status) {
			continue
		}
		if err := c.deps.Client.Status().Patch(ctx, o, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("updating the status of NodeOverlay %s: %w", o.Name, err))
			}
			continue
		}
		if !v.Applied() && (stored.GetCondition(karpv1alpha1.ConditionTypeValidationSucceeded) == nil ||
			stored.GetCondition(karpv1alpha1.ConditionTypeValidationSucceeded).Reason != v.Reason) {
			log.FromContext(ctx).Info("NodeOverlay not applied", "nodeoverlay", o.Name, "reason", v.Reason, "message", v.Message)
			if c.deps.Recorder != nil {
				c.deps.Recorder.Event(o, "Warning", v.Reason, v.Message)
			}
		}
	}
	return errors.Join(errs...)
}
