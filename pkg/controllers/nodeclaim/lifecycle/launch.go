package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// launch creates the instance once and records it in the NodeClaim.
func (c *Controller) launch(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	if nc.IsTrue(karpv1.ConditionTypeLaunched) {
		c.launches.forget(nc.Name)
		return reconcile.Result{}, false, nil
	}
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "nodepool", nc.NodePoolName())
	stored := nc.DeepCopy()
	if nc.Status.ProviderID != "" {
		// Launched before but the condition was lost: do not launch twice.
		nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
		return reconcile.Result{}, false, c.patchStatus(ctx, stored, nc)
	}
	// The writes recording a launch trigger this NodeClaim's next pass, which may read the cache before the
	// writes reach it: a launch already recorded waits for the cache (its update event brings the NodeClaim
	// back), and one whose recording failed is recorded again without asking the cloud provider a second time.
	prior, rec := c.launches.get(nc)
	if !rec.at.IsZero() {
		if rec.ahead(nc, c.deps.Clock.Now()) {
			return reconcile.Result{RequeueAfter: cacheLagRequeue}, true, nil
		}
		// The cache is past the write that recorded the launch and does not show it (someone rewrote the status),
		// or never showed it: launch again, which adopts the instance if it is still there (the NodeClaim stays
		// marked as tried, so the look-up happens).
		c.launches.dropResult(nc.Name)
	}
	created, err := prior, error(nil)
	if created == nil {
		cctx := ctx
		if c.firstLaunch(nc) {
			cctx = cloudprovider.WithFirstLaunch(ctx)
		}
		c.launches.tried(nc)
		created, err = c.deps.CloudProvider.Create(cctx, nc)
	}
	switch {
	case err == nil:
	case cloudprovider.IsInsufficientCapacity(err):
		logger.Info("no capacity for nodeclaim, deleting it so provisioning retries", "error", err.Error())
		c.announceInsufficientCapacity(ctx, nc, err)
		nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonInsufficientCapacity, err.Error())
		if perr := c.patchStatus(ctx, stored, nc); perr != nil {
			deps.LogError(log.IntoContext(ctx, logger), perr, "recording launch failure")
		}
		if err := c.deleteNodeClaim(ctx, nc); err != nil {
			return reconcile.Result{}, true, err
		}
		deps.CountDisrupted(ctx, c.deps, nc, karpv1.MetricReasonInsufficientCapacity, "")
		return reconcile.Result{}, true, nil
	case cloudprovider.IsThrottled(err):
		// Not a launch failure: the SDK retried with backoff, and the reconcile is retried later (RetryTransient).
		return reconcile.Result{}, true, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
	case cloudprovider.IsNodeClassNotReady(err):
		c.deps.Recorder.Event(nc, corev1.EventTypeWarning, karpv1.EventReasonNodeClassNotReady, truncate("NodeClaim "+nc.Name+" cannot launch: "+err.Error()))
		nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonNodeClassNotReady, err.Error())
		return reconcile.Result{RequeueAfter: nodeClassRequeue}, true, c.patchStatus(ctx, stored, nc)
	default:
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, "LaunchFailed", "NodeClaim %s could not launch: %v", nc.Name, err)
		nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunchFailed, err.Error())
		if perr := c.patchStatus(ctx, stored, nc); perr != nil {
			deps.LogError(log.IntoContext(ctx, logger), perr, "recording launch failure")
		}
		return reconcile.Result{}, true, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
	}

	c.launches.launched(nc, created)
	// Labels the cloud chose (instance type, zone, capacity type, ...) go on the NodeClaim's metadata first,
	// so that they are on it before it is marked Launched.
	meta := nc.DeepCopy()
	changed := false
	for k, v := range created.Labels {
		if nc.Labels == nil {
			nc.Labels = map[string]string{}
		}
		if nc.Labels[k] != v {
			nc.Labels[k] = v
			changed = true
		}
	}
	for k, v := range created.Annotations {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		if nc.Annotations[k] != v {
			nc.Annotations[k] = v
			changed = true
		}
	}
	if changed {
		// A merge patch of the two maps sets just these keys: it needs no lock, and a lock made it fail whenever
		// another controller had written the NodeClaim's status since the cache read it.
		if err := c.deps.Client.Patch(ctx, nc, client.MergeFrom(meta)); err != nil {
			return reconcile.Result{}, true, client.IgnoreNotFound(fmt.Errorf("recording launched labels: %w", err))
		}
		c.written.Wrote(nc)
	}
	// The status as the API server last answered (the labels' patch returns it, with any condition another
	// controller wrote since the cache read the NodeClaim): the status patch then holds only what the launch sets.
	stored = nc.DeepCopy()
	nc.Status.ProviderID = created.Status.ProviderID
	nc.Status.ImageID = created.Status.ImageID
	nc.Status.Capacity = created.Status.Capacity
	nc.Status.Allocatable = created.Status.Allocatable
	nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
	if !nc.IsTrue(karpv1.ConditionTypeRegistered) {
		waitingForNode(nc)
	}
	if err := c.patchStatus(ctx, stored, nc); err != nil {
		return reconcile.Result{}, true, err
	}
	c.launches.recorded(nc, c.deps.Clock.Now())
	c.deps.Metrics.NodeClaimLaunchDuration.WithLabelValues(nc.NodePoolName()).Observe(c.since(nc).Seconds())
	logger.Info("launched nodeclaim", "provider-id", nc.Status.ProviderID,
		"instance-type", nc.Labels[corev1.LabelInstanceTypeStable], "zone", nc.Labels[corev1.LabelTopologyZone],
		"capacity-type", nc.Labels[karpv1.CapacityTypeLabelKey])
	return reconcile.Result{}, false, nil
}

// firstLaunchMargin is how long after this controller started a NodeClaim must have been created for its
// launch to count as a first launch: it covers the creation timestamp's truncation to the second and clock
// skew between the API server and this process.
const firstLaunchMargin = 10 * time.Second

// Started records when this controller began running launches. The manager runs it once this replica leads;
// tests call it directly.
func (c *Controller) Started(at time.Time) { c.started.Store(&at) }

// firstLaunch reports whether no instance can have been launched for nc yet, so the cloud provider may skip
// looking for one: this process never tried to launch it, and it was created after this controller started
// leading (a NodeClaim created before may have been launched by a process that crashed before recording it).
func (c *Controller) firstLaunch(nc *karpv1.NodeClaim) bool {
	started := c.started.Load()
	if started == nil || c.launches.wasTried(nc) {
		return false
	}
	return nc.CreationTimestamp.Time.After(started.Add(firstLaunchMargin))
}

// cacheLagRequeue is when a pass that found its recorded launch missing from the cache looks again, should
// the cache's update event not come first.
const cacheLagRequeue = 5 * time.Second

// maxCacheLag is how long this controller's own writes (a recorded launch or registration, the objects it wrote)
// are trusted over a cache that does not show them yet. The resource versions tell a cache behind a write from one
// past it, so this only bounds the trust when they cannot; it is long because a saturated API server delivers
// watch events minutes late (5,000 nodes launched at once on a 2-core machine): with a minute, a fifth of that
// setup's NodeClaims were written again from stale copies, and refused.
const maxCacheLag = 10 * time.Minute

// launchMemo holds the launches made by this process until the cache shows them: the cloud provider's answer
// and whether the NodeClaim's status recorded it. Entries are keyed by name and checked against the UID.
type launchMemo struct {
	mu sync.Mutex
	m  map[string]launchEntry
	// attempts holds the NodeClaims (name to UID) this process asked the cloud provider to launch, until they
	// are launched or gone: a second attempt must look for an instance the first may have launched.
	attempts map[string]types.UID
}

type launchEntry struct {
	uid     types.UID
	created *karpv1.NodeClaim
	// recorded is the write that recorded the launch in the NodeClaim's status (zero: not yet).
	recorded writeMark
}

// writeMark is one of this controller's writes: when it was made, and the resource version the API server
// answered with.
type writeMark struct {
	at              time.Time
	resourceVersion string
}

// ahead reports whether the write is still to reach a cache that shows the object as cached: the cache is behind
// it (by resource version, or it cannot be told), and the write was made less than maxCacheLag before now.
func (w writeMark) ahead(cached *karpv1.NodeClaim, now time.Time) bool {
	return deps.CacheBehind(w.resourceVersion, cached.ResourceVersion) && now.Sub(w.at) < maxCacheLag
}

func newLaunchMemo() *launchMemo {
	return &launchMemo{m: map[string]launchEntry{}, attempts: map[string]types.UID{}}
}

func (l *launchMemo) tried(nc *karpv1.NodeClaim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts[nc.Name] = nc.UID
}

func (l *launchMemo) wasTried(nc *karpv1.NodeClaim) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	uid, ok := l.attempts[nc.Name]
	return ok && uid == nc.UID
}

// dropResult forgets the launch result kept for the NodeClaim but not that a launch was tried.
func (l *launchMemo) dropResult(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, name)
}

// get returns the launch made for nc not yet recorded, if any, or the status write that recorded it.
func (l *launchMemo) get(nc *karpv1.NodeClaim) (*karpv1.NodeClaim, writeMark) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[nc.Name]
	if !ok || e.uid != nc.UID {
		return nil, writeMark{}
	}
	return e.created, e.recorded
}

func (l *launchMemo) launched(nc, created *karpv1.NodeClaim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[nc.Name] = launchEntry{uid: nc.UID, created: created}
}

// recorded notes that nc, as the API server answered the status write, records its launch.
func (l *launchMemo) recorded(nc *karpv1.NodeClaim, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[nc.Name]; ok && e.uid == nc.UID {
		e.recorded = writeMark{at: at, resourceVersion: nc.ResourceVersion}
		e.created = nil
		l.m[nc.Name] = e
	}
}

func (l *launchMemo) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, name)
	delete(l.attempts, name)
}

// equalStatus compares statuses ignoring condition timestamps set by SetStatusCondition.
func equalStatus(a, b *karpv1.NodeClaim) bool {
	sa, sb := a.Status.DeepCopy(), b.Status.DeepCopy()
	for _, s := range []*karpv1.NodeClaimStatus{sa, sb} {
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	return equality.Semantic.DeepEqual(sa, sb)
}
