package podevents

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/operator/index"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.podevents"

// dedupeWindow is how close to now a stored lastPodEventTime must be for a new pod event to leave it alone.
// consolidateAfter is measured in seconds at best, so a few seconds of imprecision change nothing.
const dedupeWindow = 5 * time.Second

// Controller records pod events on the NodeClaim of the node they happened on. Its reconcile requests are
// keyed by node name: a request means "a pod event just happened on this node".
type Controller struct {
	deps deps.Deps
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register adds the controller to the manager: it watches Pods and turns their events into requests for
// their node.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).
		Watches(&corev1.Pod{}, podEventHandler()).
		Complete(deps.RetryTransient(c))
}

// podEventHandler enqueues the node of each pod event (see events.go); other pod changes enqueue nothing.
func podEventHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], node string) {
		if node != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				enqueue(q, onCreate(pod, e.IsInInitialList))
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*corev1.Pod)
			pod, okNew := e.ObjectNew.(*corev1.Pod)
			if okOld && okNew {
				enqueue(q, onUpdate(old, pod))
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				enqueue(q, onDelete(pod))
			}
		},
	}
}

// Reconcile stamps the current time as status.lastPodEventTime on the NodeClaim of the node named by req.
// Nodes without a NodeClaim are not Dovetail's and are ignored.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("getting node %s: %w", req.Name, err))
	}
	if node.Spec.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, list, client.MatchingFields{index.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of node %s: %w", node.Name, err)
	}
	now := c.deps.Clock.Now()
	var errs []error
	for i := range list.Items {
		if err := c.record(ctx, &list.Items[i], node.Name, now); err != nil {
			errs = append(errs, err)
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// record sets lastPodEventTime to now unless the stored time is already within dedupeWindow of it. The merge
// patch carries only that field, so it cannot undo other controllers' status writes and needs no lock.
func (c *Controller) record(ctx context.Context, nc *karpv1.NodeClaim, node string, now time.Time) error {
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	if last := nc.Status.LastPodEventTime.Time; !last.IsZero() && absDuration(now.Sub(last)) < dedupeWindow {
		return nil
	}
	patch := client.MergeFrom(nc.DeepCopy())
	nc.Status.LastPodEventTime = metav1.NewTime(now)
	if err := c.deps.Client.Status().Patch(ctx, nc, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("recording pod event on nodeclaim %s: %w", nc.Name, err)
	}
	log.FromContext(ctx).V(1).Info("recorded pod event", "nodeclaim", nc.Name, "node", node, "nodepool", nc.NodePoolName())
	return nil
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
