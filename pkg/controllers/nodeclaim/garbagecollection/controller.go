package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.garbagecollection"

// LeakGracePeriod is how old an instance without a NodeClaim must be before it is terminated; it covers the
// time between the cloud launching it and the lifecycle controller recording its provider ID.
const LeakGracePeriod = 30 * time.Second

// MinInterval and MaxInterval bound the time between two passes, which grows with the instances the last pass
// listed (IntervalPerInstance each): every 30 s up to 1,250 instances, every 2 minutes (Karpenter's interval) from
// 5,000. A listing's cost grows with the instances (at 5,000 a DescribeInstances listing is about 1.5 s of CPU
// and, with the collection of what it allocates, 2 s), so the listings cost about the same at any size, while a
// small cluster keeps finding leaked instances and instances gone within 30 s.
const (
	MinInterval         = 30 * time.Second
	MaxInterval         = 2 * time.Minute
	IntervalPerInstance = 24 * time.Millisecond
)

// NextPass is the wait after a pass that listed instances instances.
func NextPass(instances int) time.Duration {
	return min(MaxInterval, max(MinInterval, time.Duration(instances)*IntervalPerInstance))
}

// Controller garbage-collects NodeClaims and instances.
type Controller struct {
	deps deps.Deps
	// listed is how many instances the last listing returned.
	listed atomic.Int64
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register runs a pass at once, then after each pass NextPass later (on the injected clock), while the manager is
// leader.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return m.Add(deps.PeriodicBy(Name, c.deps.Clock, func() time.Duration { return NextPass(int(c.listed.Load())) },
		"garbage collection pass failed; the next one retries", c.Reconcile))
}

// Reconcile runs one pass.
func (c *Controller) Reconcile(ctx context.Context) error {
	ctx = metrics.WithController(ctx, Name)
	logger := log.FromContext(ctx)
	instances, err := c.deps.CloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	c.listed.Store(int64(len(instances)))
	// The cache's objects, not copies: the pass reads them, and deletes by a copy (deep copying every NodeClaim
	// at each pass was 0.9 GB allocated in a 5,000-node run).
	claims := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	claimed := map[string]bool{}
	// NodeClaims whose launch is not recorded yet: an instance tagged for one of them is that launch, whose status
	// write has not landed (the API server was unreachable, or slow). The lifecycle controller adopts it on its
	// next pass; terminating it here made the NodeClaim launch a second instance after a 30 s API server outage.
	unrecorded := map[string]bool{}
	for _, nc := range claims.Items {
		if nc.Status.ProviderID != "" {
			claimed[nc.Status.ProviderID] = true
		} else if nc.DeletionTimestamp.IsZero() {
			unrecorded[nc.Name] = true
		}
	}
	live := map[string]bool{}
	var errs []error
	for _, inst := range instances {
		id := inst.Status.ProviderID
		live[id] = true
		// An instance the cloud is already terminating (EC2's shutting-down, usually our own termination a
		// moment ago) is no leak: terminating it again would only repeat the call.
		if claimed[id] || unrecorded[inst.Name] || !inst.DeletionTimestamp.IsZero() || c.deps.Clock.Since(inst.CreationTimestamp.Time) < LeakGracePeriod {
			continue
		}
		// The cache may lag behind the NodeClaim's launch record (under load it was seen half a minute behind,
		// and 103 of a 200-node scale-out's fresh instances were terminated): ask the API server before
		// terminating.
		if held, err := c.claimedNow(ctx, inst.Name, id); err != nil {
			errs = append(errs, err)
			continue
		} else if held {
			continue
		}
		logger.Info("terminating instance without a nodeclaim", "provider-id", id, "nodeclaim", inst.Name)
		if err := c.deps.CloudProvider.Delete(ctx, inst); err != nil && !cloudprovider.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("terminating leaked instance %s: %w", id, err))
		}
	}
	if err := c.adopt(ctx, claims.Items, live); err != nil {
		errs = append(errs, err)
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		id := nc.Status.ProviderID
		if id == "" || live[id] || !nc.DeletionTimestamp.IsZero() || !nc.IsTrue(karpv1.ConditionTypeLaunched) {
			continue
		}
		// Confirm with a direct lookup: List may lag behind a launch.
		if _, err := c.deps.CloudProvider.Get(ctx, id); err == nil || !cloudprovider.IsNotFound(err) || cloudprovider.IsNotOwned(err) {
			switch {
			case cloudprovider.IsNotOwned(err):
				// The instance exists but is not this cluster's and could not be adopted (adopt logged why): the
				// NodeClaim is not deleted on the strength of an instance that is still running.
			case err != nil:
				errs = append(errs, fmt.Errorf("looking up instance %s: %w", id, err))
			}
			continue
		}
		logger.Info("deleting nodeclaim whose instance is gone", "nodeclaim", nc.Name, "provider-id", id, "nodepool", nc.NodePoolName())
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, "InstanceNotFound", "Instance %s no longer exists; deleting the NodeClaim", id)
		if err := c.deps.Client.Delete(ctx, nc.DeepCopy()); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// claimedNow reports whether the API server holds the NodeClaim an instance was launched for with that
// instance's provider ID, or without a provider ID yet (its launch may be on its way to being recorded).
func (c *Controller) claimedNow(ctx context.Context, name, providerID string) (bool, error) {
	if name == "" {
		return false, nil
	}
	reader := c.deps.APIReader
	if reader == nil {
		reader = c.deps.Client
	}
	nc := &karpv1.NodeClaim{}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("confirming that instance %s has no nodeclaim: %w", providerID, err)
	}
	return nc.Status.ProviderID == providerID || (nc.Status.ProviderID == "" && nc.DeletionTimestamp.IsZero()), nil
}

// adopt gives this cluster's identity to the instances of launched NodeClaims that List did not report: instances
// launched by Karpenter before Dovetail took the cluster over carry its name but no cluster UID. Those adopted are
// added to live, so they are neither looked up again nor taken for gone. A NodeClaim's instance that cannot be
// adopted (another cluster's identity) is reported with an event; the NodeClaim is left alone.
func (c *Controller) adopt(ctx context.Context, claims []karpv1.NodeClaim, live map[string]bool) error {
	adopter, ok := cloudprovider.Find[cloudprovider.Adopter](c.deps.CloudProvider)
	if !ok {
		return nil
	}
	var candidates []*karpv1.NodeClaim
	for i := range claims {
		nc := &claims[i]
		if nc.Status.ProviderID == "" || live[nc.Status.ProviderID] || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		candidates = append(candidates, nc)
	}
	if len(candidates) == 0 {
		return nil
	}
	res, err := adopter.AdoptInstances(ctx, candidates)
	for id := range res.Owned {
		live[id] = true
	}
	if len(res.Adopted) > 0 {
		log.FromContext(ctx).Info("adopted instances launched without this cluster's identity", "count", len(res.Adopted))
	}
	for _, nc := range candidates {
		why, refused := res.Refused[nc.Status.ProviderID]
		if !refused {
			continue
		}
		log.FromContext(ctx).Info("not adopting the instance of a nodeclaim; leaving both alone", "nodeclaim", nc.Name,
			"provider-id", nc.Status.ProviderID, "reason", why)
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, "InstanceNotAdopted",
			"Instance %s is not adopted because %s; Dovetail neither deletes this NodeClaim nor acts on the instance", nc.Status.ProviderID, why)
	}
	if err != nil {
		return fmt.Errorf("adopting instances: %w", err)
	}
	return nil
}
