package termination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
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
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Name is the controller's name in logs and metrics.
const Name = "node.termination"

// PollInterval is how often a terminating node is looked at again while it waits for pods, volumes or the
// instance.
const PollInterval = 5 * time.Second

// Event reasons.
const (
	ReasonDeletingNodeClaim     = "DeletingNodeClaim"
	ReasonEvicted               = karpv1.EventReasonEvicted
	ReasonPodDisrupted          = karpv1.EventReasonDisrupted
	ReasonFailedDraining        = karpv1.EventReasonFailedDraining
	ReasonEvictionBlocked       = "EvictionBlocked"
	ReasonEvictionFailed        = "EvictionFailed"
	ReasonDoNotDisrupt          = "DisruptionBlocked"
	ReasonGracePeriodDeletion   = karpv1.EventReasonTerminationGracePeriodExpiring
	ReasonAwaitingVolumes       = karpv1.EventReasonAwaitingVolumeDetachment
	ReasonTerminatingInstance   = "TerminatingInstance"
	ReasonInstanceGone          = "InstanceTerminated"
	ReasonInvalidTerminationAnn = "InvalidTerminationTimestamp"
	ReasonFinalizerRemoved      = "Terminated"
)

// ReasonDrained is the reason of the NodeClaim's Drained=True condition once every evictable pod is gone.
const ReasonDrained = "Drained"

// ReasonPodsReturned is the reason of the NodeClaim's Drained=False condition when pods are found on a node whose
// drain had already finished. It keeps on the NodeClaim the fact that the node was drained once, so that the
// drain finishing again is not counted again in karpenter_nodes_drained_total.
const ReasonPodsReturned = "PodsReturned"

// Controller drains and terminates Nodes that carry the karpenter.sh/termination finalizer.
type Controller struct {
	kube      client.Client
	clientset kubernetes.Interface
	cloud     cloudprovider.CloudProvider
	clock     clock.Clock
	recorder  record.EventRecorder
	metrics   *metrics.Metrics

	mu       sync.Mutex
	backoffs map[types.UID]backoff
	events   map[string]time.Time

	// evictions holds a token for every eviction request in flight (at most maxConcurrentEvictions).
	evictions chan struct{}
	// underBudget counts the eviction requests in flight by the PodDisruptionBudgets that select their pods
	// (at most maxConcurrentEvictionsPerBudget a key); guarded by mu.
	underBudget map[string]int

	// written holds the NodeClaims as this controller last wrote their conditions: a pass that reads a
	// NodeClaim from a cache still behind that write (the next drain step follows within seconds) works on the
	// written copy, since a condition patch computed from the older one fails its test.
	written *deps.OwnWrites[*karpv1.NodeClaim]
}

// ownWritesMaxAge bounds the trust in this controller's own condition writes over a cache that does not show
// them yet.
const ownWritesMaxAge = 10 * time.Minute

// backoff remembers refused evictions of one pod: how many in a row, when to retry, and why (for messages).
type backoff struct {
	failures int
	next     time.Time
	reason   string
}

// NewController builds the controller from the shared dependencies.
func NewController(d deps.Deps) *Controller {
	return &Controller{
		kube:        d.Client,
		clientset:   d.KubeClient,
		cloud:       d.CloudProvider,
		clock:       d.Clock,
		recorder:    d.Recorder,
		metrics:     d.Metrics,
		backoffs:    map[types.UID]backoff{},
		events:      map[string]time.Time{},
		evictions:   make(chan struct{}, maxConcurrentEvictions),
		underBudget: map[string]int{},
		written:     deps.NewOwnWrites[*karpv1.NodeClaim](d.Clock, ownWritesMaxAge),
	}
}

// maxConcurrentReconciles is how many Nodes are drained and terminated at once. Each pass mostly waits on the API
// server and the cloud, and a mass deletion (500 Nodes at once) must not queue behind a handful of workers.
const maxConcurrentReconciles = 50

// maxConcurrentEvictions bounds the eviction requests in flight across all nodes.
const maxConcurrentEvictions = 32

// maxConcurrentEvictionsPerBudget bounds the eviction requests in flight for pods under the same
// PodDisruptionBudgets. The API server admits such an eviction by updating the budget's status with optimistic
// locking: dozens at once under one budget keep invalidating each other's update and time out after a minute (a
// 500-node deletion with 50 workers evicted about one pod every 3 s), while a few at a time go through in
// milliseconds each. Pods no budget selects do not contend: a cluster-wide limit of 4 made a 64-node
// consolidation evict about one pod a second.
const maxConcurrentEvictionsPerBudget = 4

// evictionSlotWait is how soon a pod that found every eviction slot taken is tried again. Waiting for a slot
// inside the pass instead held all 50 workers, so nodes already drained waited minutes for a turn.
const evictionSlotWait = 5 * time.Second

// Register adds the controller to the manager: it watches Nodes, and NodeClaims mapped to their Node.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if err := c.validate(); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(m).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(deleting)).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			nc, ok := o.(*karpv1.NodeClaim)
			if !ok || nc.Status.NodeName == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nc.Status.NodeName}}}
		}), builder.WithPredicates(deleting)).
		// A node waiting for its volumes to detach goes on as soon as the last attachment goes.
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			names := index.VolumeAttachmentNode(o)
			if len(names) == 0 {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: names[0]}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(deps.RetryTransient(c))
}

// deleting passes events of objects whose deletion was requested (and their final deletion).
var deleting = predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })

// conflictRequeue is how soon a pass that lost an optimistic-lock race is retried (deps.RequeueOnConflict).
const conflictRequeue = 200 * time.Millisecond

// Reconcile moves a deleted Node one step further through termination.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcile(ctx, req)
	return deps.RequeueOnConflict(ctx, conflictRequeue, res, err)
}

func (c *Controller) reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, err error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("node", node.Name))

	nc, err := c.nodeClaimFor(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nc != nil {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", nc.Name))
		nc, _ = c.written.Latest(nc)
		if nc.DeletionTimestamp.IsZero() {
			if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of deleted node: %w", nc.Name, err)
			}
			c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonDeletingNodeClaim,
				"Node was deleted: deleting its NodeClaim %s", nc.Name)
			// Read back the deletion timestamp, which fixes the termination deadline.
			if err := c.kube.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
				if !apierrors.IsNotFound(err) {
					return reconcile.Result{}, fmt.Errorf("reading back nodeclaim %s: %w", nc.Name, err)
				}
				nc = nil
			}
		}
	}

	// The conditions the pass sets are written once, when it ends (before the node is released).
	w := newConditionWrites(nc)
	defer func() { err = errors.Join(err, c.flush(ctx, w)) }()

	providerID := node.Spec.ProviderID
	if providerID == "" && nc != nil {
		providerID = nc.Status.ProviderID
	}
	gone, err := c.instanceGone(ctx, providerID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if gone {
		msg := fmt.Sprintf("Instance %s no longer exists: releasing the node without draining", providerID)
		if providerID == "" {
			msg = "Node has no provider ID, so there is no instance to drain or terminate: releasing it"
		}
		c.recorder.Event(node, corev1.EventTypeNormal, ReasonInstanceGone, msg)
		return reconcile.Result{}, c.finish(ctx, node, nc)
	}

	deadline, err := c.deadline(ctx, node, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}

	now := c.clock.Now()
	expired := termination.Expired(deadline, now)
	drain, err := c.drain(ctx, node, w, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !drain.done && !expired {
		return reconcile.Result{RequeueAfter: c.requeueAfter(now, deadline, drain.nextAt)}, nil
	}

	volumesDone, err := c.volumesDetached(ctx, node, w, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !volumesDone && !expired {
		return reconcile.Result{RequeueAfter: c.requeueAfter(now, deadline, nil)}, nil
	}

	terminated, err := c.terminateInstance(ctx, node, w, providerID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !terminated {
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	if err := c.flush(ctx, w); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, c.finish(ctx, node, nc)
}

// requeueAfter is the poll interval, shortened so that the next forced deletion, the deadline or an eviction
// retry is not missed.
func (c *Controller) requeueAfter(now time.Time, deadline, next *time.Time) time.Duration {
	d := PollInterval
	for _, t := range []*time.Time{deadline, next} {
		if t == nil {
			continue
		}
		if until := t.Sub(now); until < d {
			d = until
		}
	}
	if d < 100*time.Millisecond {
		d = 100 * time.Millisecond
	}
	return d
}

// nodeClaimFor returns the NodeClaim launched for the node (same provider ID, or naming the node), or nil.
func (c *Controller) nodeClaimFor(ctx context.Context, node *corev1.Node) (*karpv1.NodeClaim, error) {
	// The owner Dovetail set at registration is read alone.
	for _, o := range node.OwnerReferences {
		if o.Kind != "NodeClaim" || !strings.HasPrefix(o.APIVersion, karpv1.Group+"/") {
			continue
		}
		nc := &karpv1.NodeClaim{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: o.Name}, nc); err != nil {
			if apierrors.IsNotFound(err) {
				break
			}
			return nil, fmt.Errorf("getting nodeclaim %s: %w", o.Name, err)
		}
		if node.Spec.ProviderID == "" || nc.Status.ProviderID == "" || nc.Status.ProviderID == node.Spec.ProviderID {
			return nc, nil
		}
	}
	// Otherwise every NodeClaim is looked at, read from the cache without copying them all (a mass deletion runs
	// 50 of these at once over hundreds of NodeClaims); only the match is copied, as callers modify it.
	list := &karpv1.NodeClaimList{}
	if err := c.kube.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range list.Items {
		nc := &list.Items[i]
		if node.Spec.ProviderID != "" && nc.Status.ProviderID == node.Spec.ProviderID {
			return nc.DeepCopy(), nil
		}
	}
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.Status.NodeName == node.Name && (node.Spec.ProviderID == "" || nc.Status.ProviderID == "") {
			return nc.DeepCopy(), nil
		}
	}
	return nil, nil
}

// instanceGone reports whether the cloud no longer has the instance (or there is none to ask about).
func (c *Controller) instanceGone(ctx context.Context, providerID string) (bool, error) {
	if providerID == "" {
		return true, nil
	}
	if _, err := c.cloud.Get(ctx, providerID); err != nil {
		if cloudprovider.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("looking up instance %s: %w", providerID, err)
	}
	return false, nil
}

// deadline returns the termination deadline and records it on the Node as
// karpenter.sh/nodeclaim-termination-timestamp. Without a NodeClaim, the Node's own annotation is used.
func (c *Controller) deadline(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim) (*time.Time, error) {
	var deadline *time.Time
	if nc != nil {
		d, err := termination.NodeClaimDeadline(nc)
		if err != nil {
			c.event(nc, corev1.EventTypeWarning, ReasonInvalidTerminationAnn, err.Error()+"; using deletion time plus terminationGracePeriod")
		}
		deadline = d
	} else if v, ok := node.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t, err := termination.ParseDeadline(v)
		if err != nil {
			c.event(node, corev1.EventTypeWarning, ReasonInvalidTerminationAnn, err.Error()+"; draining without a deadline")
			return nil, nil
		}
		return &t, nil
	}
	if deadline == nil {
		return nil, nil
	}
	want := termination.FormatDeadline(*deadline)
	if node.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] == want {
		return deadline, nil
	}
	orig := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = want
	// A merge patch of the one annotation: nothing else is sent, so no lock is needed.
	if err := c.kube.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return nil, fmt.Errorf("annotating node with its termination timestamp: %w", err)
	}
	return deadline, nil
}

// taint adds karpenter.sh/disrupted:NoSchedule so nothing new lands on the node.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	want := karpv1.DisruptedNoScheduleTaint()
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&want) {
			return nil
		}
	}
	orig := node.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	want.TimeAdded = &now
	node.Spec.Taints = append(node.Spec.Taints, want)
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node %s: %w", node.Name, err)
	}
	return nil
}

// terminateInstance asks the cloud to terminate the instance; it reports true once the cloud says it is gone
// (shutting down or terminated).
func (c *Controller) terminateInstance(ctx context.Context, node *corev1.Node, w *conditionWrites, providerID string) (bool, error) {
	nc := w.nc
	target := nc
	if target == nil {
		target = &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
		target.Status.ProviderID = providerID
		target.Status.NodeName = node.Name
	}
	err := c.cloud.Delete(ctx, target)
	if cloudprovider.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("terminating instance %s: %w", providerID, err)
	}
	log.FromContext(ctx).Info("terminating instance", "instance-id", providerID)
	c.event(node, corev1.EventTypeNormal, ReasonTerminatingInstance, fmt.Sprintf("Terminating instance %s", providerID))
	c.setCondition(w, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue,
		"InstanceTerminating", fmt.Sprintf("Instance %s is being terminated", providerID))
	return false, nil
}

// finish removes the finalizer and records the node as terminated; the copy of its NodeClaim last written is
// forgotten.
func (c *Controller) finish(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim) error {
	if nc != nil {
		c.written.Forget(nc.Name)
	}
	if !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		return nil
	}
	// The finalizer alone is removed (tested where this copy has it): the kubelet's status writes meanwhile do not
	// make the removal fail.
	if err := deps.RemoveFinalizer(ctx, c.kube, node, karpv1.TerminationFinalizer, schema.GroupResource{Resource: "nodes"}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("removing finalizer from node %s: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("node terminated")
	c.prune()
	if c.metrics != nil {
		pool := node.Labels[karpv1.NodePoolLabelKey]
		c.metrics.CountNodeTerminated(node)
		c.metrics.NodesTerminationDuration.WithLabelValues(pool).
			Observe(c.clock.Since(node.DeletionTimestamp.Time).Seconds())
		c.metrics.NodesLifetimeDuration.WithLabelValues(pool).Observe(c.clock.Since(node.CreationTimestamp.Time).Seconds())
	}
	return nil
}

// conditionWrites gathers the NodeClaim conditions a pass changes, to be written together in one status patch
// (flush): the pass that finds a node drained sets Drained, VolumesDetached and InstanceTerminating one after the
// other, three patches of the same NodeClaim a few milliseconds apart when each was written at once.
type conditionWrites struct {
	// stored is the NodeClaim as the pass found it, nc the pass's copy the conditions are set on.
	stored, nc *karpv1.NodeClaim
	types      []string
}

// newConditionWrites starts the pass's condition writes on nc (nil when the node has no NodeClaim).
func newConditionWrites(nc *karpv1.NodeClaim) *conditionWrites {
	if nc == nil {
		return &conditionWrites{}
	}
	return &conditionWrites{stored: nc.DeepCopy(), nc: nc}
}

// setCondition sets one NodeClaim condition on the pass's copy; flush writes it.
func (c *Controller) setCondition(w *conditionWrites, t string, status metav1.ConditionStatus, reason, message string) {
	if w.nc == nil || !w.nc.SetCondition(t, status, reason, message) || slices.Contains(w.types, t) {
		return
	}
	w.types = append(w.types, t)
}

// flush writes the conditions the pass set, through the status subresource, when they changed.
func (c *Controller) flush(ctx context.Context, w *conditionWrites) error {
	if w.nc == nil || len(w.types) == 0 {
		return nil
	}
	orig, nc := w.stored, w.nc
	var types []string
	for _, t := range w.types {
		if !equality.Semantic.DeepEqual(orig.GetCondition(t), nc.GetCondition(t)) {
			types = append(types, t)
		}
	}
	w.types = nil
	if len(types) == 0 {
		return nil // only Ready's restamp changed, which is not this controller's to write
	}
	// Only these conditions are sent and tested: the other controllers' status writes meanwhile (the NodeClaim
	// termination's InstanceTerminating, the pod events' timestamp, the lifecycle's restamp of Ready after the
	// deletion) do not make it fail.
	deps.KeepOnlyConditions(orig, nc, types...)
	if err := deps.PatchNodeClaimStatus(ctx, c.kube, orig, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting conditions %s on nodeclaim %s: %w", strings.Join(types, ", "), nc.Name, err)
	}
	w.stored = nc.DeepCopy()
	c.written.Wrote(nc)
	if c.metrics != nil {
		c.metrics.RecordNodeClaimConditions(nc.Labels, nc.CreationTimestamp.Time, orig.Status.Conditions, nc.Status.Conditions)
		// A node is counted once: on its first transition to Drained=True/Drained. A node whose pods came back
		// is marked PodsReturned (see drainedBefore) and is not counted when it drains again; the mark lives in
		// the API, so a restarted controller does not count it again either.
		if d := nc.GetCondition(termination.ConditionTypeDrained); d != nil && d.Status == metav1.ConditionTrue &&
			d.Reason == ReasonDrained && !orig.IsTrue(termination.ConditionTypeDrained) && !drainedBefore(orig) {
			c.metrics.NodesDrained.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey]).Inc()
		}
	}
	return nil
}

// eventInterval limits how often the same event is emitted for the same object while a node waits.
const eventInterval = 2 * time.Minute

// event emits an event unless the same one was emitted for the same object within eventInterval.
func (c *Controller) event(obj client.Object, eventType, reason, message string) {
	key := string(obj.GetUID()) + "/" + obj.GetNamespace() + "/" + obj.GetName() + "/" + reason + "/" + message
	now := c.clock.Now()
	c.mu.Lock()
	last, seen := c.events[key]
	if seen && now.Sub(last) < eventInterval {
		c.mu.Unlock()
		return
	}
	c.events[key] = now
	c.mu.Unlock()
	c.recorder.Event(obj, eventType, reason, message)
}

// prune drops remembered events and eviction backoffs that no longer matter.
func (c *Controller) prune() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for k, t := range c.events {
		if now.Sub(t) >= eventInterval {
			delete(c.events, k)
		}
	}
	for uid, b := range c.backoffs {
		if now.Sub(b.next) > 10*time.Minute {
			delete(c.backoffs, uid)
		}
	}
}

var errNoDeps = errors.New("node termination controller needs a client, clientset, cloud provider, clock, recorder and metrics")

// validate reports missing dependencies.
func (c *Controller) validate() error {
	if c.kube == nil || c.clientset == nil || c.cloud == nil || c.clock == nil || c.recorder == nil || c.metrics == nil {
		return errNoDeps
	}
	return nil
}
