package consistency

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.consistency"

// ScanPeriod is how often a NodeClaim's Node is checked.
const ScanPeriod = 10 * time.Minute

// MinCapacityFraction is the share of a promised capacity a Node must report.
const MinCapacityFraction = 0.9

// ConsistencyCheckFailedMessage is the message of a False ConsistentStateFound condition (the issues themselves
// are in the FailedConsistencyCheck events).
const ConsistencyCheckFailedMessage = "the Node does not match the NodeClaim; see the FailedConsistencyCheck events"

// Controller checks registered NodeClaims against their Nodes.
type Controller struct {
	deps deps.Deps
	mu   sync.Mutex
	// scanned is when each NodeClaim (by name) was last checked.
	scanned map[string]scan
}

// scan is a check of one NodeClaim: its UID (a NodeClaim of the same name created later is not the same) and when.
type scan struct {
	uid types.UID
	at  time.Time
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, scanned: map[string]scan{}}
}

// Register watches NodeClaims.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	// A status patch that meets a newer NodeClaim (optimistic lock) is retried, not logged as a reconciler error.
	return builder.ControllerManagedBy(m).Named(Name).For(&karpv1.NodeClaim{}).Complete(deps.RetryTransient(c))
}

// Issues lists where the Node falls short of the NodeClaim: for each resource the NodeClaim requests (non-zero)
// and its status promises a capacity of, a Node capacity below MinCapacityFraction of the promise. Sorted by
// resource name.
func Issues(nc *karpv1.NodeClaim, node *corev1.Node) []string {
	var issues []string
	for name, requested := range nc.Spec.Resources.Requests {
		expected := nc.Status.Capacity[name]
		if requested.IsZero() || expected.IsZero() {
			continue
		}
		have := node.Status.Capacity[name]
		share := have.AsApproximateFloat64() / expected.AsApproximateFloat64()
		if share < MinCapacityFraction {
			issues = append(issues, fmt.Sprintf("Node %s has %s of %s, %.1f%% of the %s the NodeClaim was launched with",
				node.Name, have.String(), name, share*100, expected.String()))
		}
	}
	sort.Strings(issues)
	return issues
}

// Reconcile checks an initialized NodeClaim's Node at most once a ScanPeriod.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.Status.ProviderID == "" || nc.Status.NodeName == "" || !nc.DeletionTimestamp.IsZero() || !nc.IsTrue(karpv1.ConditionTypeInitialized) {
		return reconcile.Result{}, nil
	}
	now := c.deps.Clock.Now()
	c.mu.Lock()
	last, seen := c.scanned[nc.Name]
	if seen && last.uid == nc.UID && now.Sub(last.at) < ScanPeriod {
		c.mu.Unlock()
		return reconcile.Result{RequeueAfter: ScanPeriod - now.Sub(last.at)}, nil
	}
	c.scanned[nc.Name] = scan{uid: nc.UID, at: now}
	c.mu.Unlock()

	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return reconcile.Result{RequeueAfter: ScanPeriod}, client.IgnoreNotFound(err)
	}
	if node.Spec.ProviderID != nc.Status.ProviderID {
		return reconcile.Result{RequeueAfter: ScanPeriod}, nil
	}
	issues := Issues(nc, node)
	for _, issue := range issues {
		log.FromContext(ctx).Info("failed consistency check", "nodeclaim", nc.Name, "node", node.Name, "issue", issue)
		c.deps.Recorder.Event(nc, corev1.EventTypeWarning, karpv1.EventReasonFailedConsistencyCheck, issue)
	}
	stored := nc.DeepCopy()
	cond := metav1.Condition{Type: karpv1.ConditionTypeConsistentStateFound, Status: metav1.ConditionTrue,
		Reason: karpv1.ReasonConsistentStateFound, ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(now)}
	if len(issues) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, karpv1.ReasonConsistencyCheck, ConsistencyCheckFailedMessage
	}
	if !meta.SetStatusCondition(&nc.Status.Conditions, cond) {
		return reconcile.Result{RequeueAfter: ScanPeriod}, nil
	}
	// Only this condition, tested to be as read: the lifecycle's and disruption signals' writes meanwhile do not
	// make it fail.
	if err := deps.PatchNodeClaimStatus(ctx, c.deps.Client, stored, nc); err != nil {
		c.forget(nc.Name) // checked again on the retry
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err))
	}
	return reconcile.Result{RequeueAfter: ScanPeriod}, nil
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.scanned, name)
}
