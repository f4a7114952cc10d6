package termination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.termination"

// PollInterval is how often a terminating NodeClaim is looked at again while its Nodes or instance remain.
const PollInterval = 5 * time.Second

// Event reasons.
const (
	ReasonDeletingNode          = "DeletingNode"
	ReasonTerminatingInstance   = "TerminatingInstance"
	ReasonInvalidTerminationAnn = "InvalidTerminationTimestamp"
	ReasonTerminated            = "Terminated"
)

// Controller finishes the termination of deleted NodeClaims.
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	clock    clock.Clock
	recorder record.EventRecorder
	metrics  *metrics.Metrics
}

// NewController builds the controller from the shared dependencies.
func NewController(d deps.Deps) *Controller {
	return &Controller{kube: d.Client, cloud: d.CloudProvider, clock: d.Clock, recorder: d.Recorder, metrics: d.Metrics}
}

// maxConcurrentReconciles is how many NodeClaims are terminated at once. Each pass mostly waits on the API server
// and the cloud, and a mass deletion (500 NodeClaims at once) must not queue behind a handful of workers.
const maxConcurrentReconciles = 50

// Register adds the controller to the manager: it watches NodeClaims, and Nodes mapped to their NodeClaim.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.kube == nil || c.cloud == nil || c.clock == nil || c.recorder == nil || c.metrics == nil {
		return errors.New("nodeclaim termination controller needs a client, cloud provider, clock, recorder and metrics")
	}
	return ctrl.NewControllerManagedBy(m).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(deleting)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfNode), builder.WithPredicates(deleting)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(deps.RetryTransient(c))
}

// deleting passes events of objects whose deletion was requested (and their final deletion).
var deleting = predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })

// nodeClaimsOfNode maps a Node event to its NodeClaim: the owner Dovetail set at registration, else the NodeClaim
// with the same provider ID (read from the cache without copying every NodeClaim).
func (c *Controller) nodeClaimsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return nil
	}
	if owner := nodeClaimOwner(node); owner != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: owner}}}
	}
	list := &karpv1.NodeClaimList{}
	if err := c.kube.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil { // read only
		log.FromContext(ctx).Error(err, "listing nodeclaims for a node event", "node", node.Name)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// nodeClaimOwner returns the name of the NodeClaim that owns the node, "" if none does.
func nodeClaimOwner(node *corev1.Node) string {
	for _, o := range node.OwnerReferences {
		if o.Kind == "NodeClaim" && strings.HasPrefix(o.APIVersion, karpv1.Group+"/") {
			return o.Name
		}
	}
	return ""
}

// conflictRequeue is how soon a pass that lost an optimistic-lock race is retried (deps.RequeueOnConflict).
const conflictRequeue = 200 * time.Millisecond

// Reconcile moves a deleted NodeClaim one step further through termination.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcile(ctx, req)
	return deps.RequeueOnConflict(ctx, conflictRequeue, res, err)
}

func (c *Controller) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", nc.Name))

	if err := c.annotateDeadline(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}

	nodes, err := c.nodesOf(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(nodes) > 0 {
		for _, node := range nodes {
			if !node.DeletionTimestamp.IsZero() {
				continue
			}
			if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting node %s of deleted nodeclaim: %w", node.Name, err)
			}
			log.FromContext(ctx).Info("deleting node", "node", node.Name)
			c.recorder.Eventf(nc, corev1.EventTypeNormal, ReasonDeletingNode,
				"NodeClaim was deleted: deleting its Node %s, which drains it", node.Name)
		}
		// The Node's finalizer drains it and terminates the instance; a Node event requeues us.
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}

	if nc.Status.ProviderID != "" {
		err := c.cloud.Delete(ctx, nc)
		switch {
		case cloudprovider.IsNotFound(err):
		case err != nil:
			return reconcile.Result{}, fmt.Errorf("terminating instance %s: %w", nc.Status.ProviderID, err)
		default:
			log.FromContext(ctx).Info("terminating instance", "instance-id", nc.Status.ProviderID)
			c.recorder.Eventf(nc, corev1.EventTypeNormal, ReasonTerminatingInstance, "Terminating instance %s", nc.Status.ProviderID)
			orig := nc.DeepCopy()
			if nc.SetCondition(karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, "InstanceTerminating",
				fmt.Sprintf("Instance %s is being terminated", nc.Status.ProviderID)) {
				// Only the condition is sent and tested: the node termination controller's conditions written
				// meanwhile (and the lifecycle's restamp of Ready after the deletion) do not make it fail.
				deps.KeepOnlyConditions(orig, nc, karpv1.ConditionTypeInstanceTerminating)
				if err := deps.PatchNodeClaimStatus(ctx, c.kube, orig, nc); client.IgnoreNotFound(err) != nil {
					return reconcile.Result{}, fmt.Errorf("setting InstanceTerminating on nodeclaim %s: %w", nc.Name, err)
				} else if err == nil && c.metrics != nil {
					c.metrics.RecordNodeClaimConditions(nc.Labels, nc.CreationTimestamp.Time, orig.Status.Conditions, nc.Status.Conditions)
				}
			}
			return reconcile.Result{RequeueAfter: PollInterval}, nil
		}
	}

	// The finalizer alone is removed (tested where this copy has it): the status writes of the other controllers
	// meanwhile do not make the removal fail, as an optimistic lock on the whole NodeClaim did.
	if err := deps.RemoveFinalizer(ctx, c.kube, nc, karpv1.TerminationFinalizer, schema.GroupResource{Group: karpv1.Group, Resource: "nodeclaims"}); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("removing finalizer from nodeclaim %s: %w", nc.Name, err)
	}
	log.FromContext(ctx).Info("nodeclaim terminated", "instance-id", nc.Status.ProviderID)
	if c.metrics != nil {
		c.recordTerminated(nc)
	}
	return reconcile.Result{}, nil
}

// annotateDeadline records when the NodeClaim's terminationGracePeriod ends as
// karpenter.sh/nodeclaim-termination-timestamp, so users and the node termination controller can read it.
func (c *Controller) annotateDeadline(ctx context.Context, nc *karpv1.NodeClaim) error {
	deadline, err := termination.NodeClaimDeadline(nc)
	if err != nil {
		c.recorder.Eventf(nc, corev1.EventTypeWarning, ReasonInvalidTerminationAnn,
			"%v; replacing it with deletion time plus terminationGracePeriod", err)
	}
	if deadline == nil {
		return nil
	}
	want := termination.FormatDeadline(*deadline)
	if nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] == want {
		return nil
	}
	orig := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = want
	// A merge patch of the one annotation: nothing else is sent, so no lock is needed.
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("annotating nodeclaim %s with its termination timestamp: %w", nc.Name, err)
	}
	return nil
}

// nodesOf returns the Nodes of the NodeClaim's instance. A registered NodeClaim names its Node, which is read
// alone; only an unregistered one (a Node may have joined without being linked yet) is matched by provider ID
// against every Node, read from the cache without copying them all.
func (c *Controller) nodesOf(ctx context.Context, nc *karpv1.NodeClaim) ([]*corev1.Node, error) {
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("getting node %s: %w", nc.Status.NodeName, err)
		}
		if nc.Status.ProviderID != "" && node.Spec.ProviderID != nc.Status.ProviderID {
			return nil, nil
		}
		return []*corev1.Node{node}, nil
	}
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	list := &corev1.NodeList{}
	if err := c.kube.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []*corev1.Node
	for i := range list.Items {
		if list.Items[i].Spec.ProviderID == nc.Status.ProviderID {
			out = append(out, list.Items[i].DeepCopy())
		}
	}
	return out, nil
}
