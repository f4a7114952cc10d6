package instancestatus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Name is the controller's name.
const Name = "interruption.instancestatus"

// Interval is how often the status checks are read (Karpenter's interval; not a setting there either).
const Interval = time.Minute

// Controller replaces instances whose status checks fail. It runs on the leader only.
type Controller struct {
	deps   deps.Deps
	lister cloudprovider.InstanceStatusLister
	// unhealthy counts karpenter_interruption_instance_status_unhealthy_total.
	unhealthy *prometheus.CounterVec

	mu sync.Mutex
	// counted holds the instance/category pairs already counted; a pair no longer reported is forgotten, so an
	// instance that becomes unhealthy again is counted again.
	counted map[string]bool
}

// NewController builds the controller. It does nothing when the cloud provider cannot list status checks.
func NewController(d deps.Deps) *Controller {
	lister, _ := d.CloudProvider.(cloudprovider.InstanceStatusLister)
	if d.InstanceStatus != nil {
		lister = d.InstanceStatus
	}
	m := d.Metrics
	if m == nil {
		m = metrics.NewForTest()
	}
	unhealthy := m.InstanceStatusUnhealthy
	return &Controller{deps: d, lister: lister, unhealthy: unhealthy, counted: map[string]bool{}}
}

// Register adds the polling loop to the manager (leader only), or nothing without a status lister.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.lister == nil {
		return nil
	}
	return m.Add(c.runnable())
}

// runnable polls at once and then every Interval of the injected clock.
func (c *Controller) runnable() manager.Runnable {
	return deps.Periodic(Name, c.deps.Clock, Interval, "checking instance status (allow ec2:DescribeInstanceStatus)", c.Poll)
}

// Poll reads the status checks once and replaces the NodeClaims whose instances call for it.
func (c *Controller) Poll(ctx context.Context) error {
	statuses, err := c.lister.UnhealthyInstances(ctx)
	if err != nil {
		return fmt.Errorf("listing instance status checks: %w", err)
	}
	var owned map[string]*karpv1.NodeClaim
	if len(statuses) > 0 {
		if owned, err = c.nodeClaimsByInstanceID(ctx); err != nil {
			return err
		}
	}
	now := c.deps.Clock.Now()
	current := map[string]bool{}
	var errs []error
	for _, s := range statuses {
		d, ok := interruption.DecideStatus(s, now)
		if !ok {
			continue
		}
		nc, ours := owned[s.InstanceID]
		if !ours {
			continue
		}
		for _, cat := range d.Categories {
			current[s.InstanceID+"/"+string(cat)] = true
		}
		c.count(d)
		if err := c.replace(ctx, nc, d); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	for k := range c.counted {
		if !current[k] {
			delete(c.counted, k)
		}
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// count increments the unhealthy counter for each category of d not counted yet for the instance.
func (c *Controller) count(d interruption.StatusDecision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cat := range d.Categories {
		key := d.InstanceID + "/" + string(cat)
		if c.counted[key] {
			continue
		}
		c.counted[key] = true
		c.unhealthy.WithLabelValues(string(cat)).Inc()
	}
}

// replace deletes the NodeClaim: forcefully (its termination deadline set to now, so the drain does not wait for
// PodDisruptionBudgets) for a failed check, through the normal drain for a scheduled event.
func (c *Controller) replace(ctx context.Context, nc *karpv1.NodeClaim, d interruption.StatusDecision) error {
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	now := c.deps.Clock.Now()
	msg := d.Message()
	orig := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[interruption.InstanceUnhealthyAnnotation] = msg
	if d.Forceful {
		if v, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; !ok || !deadlinePassed(v, now) {
			nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = termination.FormatDeadline(now)
		}
	}
	if err := c.deps.Client.Patch(ctx, nc, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating nodeclaim %s of unhealthy instance %s: %w", nc.Name, d.InstanceID, err))
	}
	uid := nc.UID
	if err := c.deps.Client.Delete(ctx, nc, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting nodeclaim %s of unhealthy instance %s: %w", nc.Name, d.InstanceID, err)
	}
	deps.CountDisrupted(ctx, c.deps, nc, d.DisruptionReason(), "")
	c.event(ctx, nc, msg)
	cats := make([]string, 0, len(d.Categories))
	for _, cat := range d.Categories {
		cats = append(cats, string(cat))
	}
	log.FromContext(ctx).Info("replacing the nodeclaim of an unhealthy instance", "nodeclaim", nc.Name,
		"node", nc.Status.NodeName, "nodepool", nc.NodePoolName(), "instance-id", d.InstanceID,
		"categories", strings.Join(cats, ","), "since", d.Since.UTC().Format(time.RFC3339), "forceful", d.Forceful)
	return nil
}

func deadlinePassed(v string, now time.Time) bool {
	t, err := termination.ParseDeadline(v)
	return err == nil && !t.After(now)
}

// event records InstanceUnhealthy on the NodeClaim and on its Node, if any.
func (c *Controller) event(ctx context.Context, nc *karpv1.NodeClaim, msg string) {
	if c.deps.Recorder == nil {
		return
	}
	c.deps.Recorder.Event(nc, corev1.EventTypeWarning, interruption.ReasonInstanceUnhealthy, msg)
	if nc.Status.NodeName == "" {
		return
	}
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return
	}
	c.deps.Recorder.Event(node, corev1.EventTypeWarning, interruption.ReasonInstanceUnhealthy, msg)
}

// nodeClaimsByInstanceID maps the instance ids of this cluster's NodeClaims (the last segment of their provider
// ID, aws:///<zone>/<instance-id>) to the NodeClaims.
func (c *Controller) nodeClaimsByInstanceID(ctx context.Context) (map[string]*karpv1.NodeClaim, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	out := make(map[string]*karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		nc := &list.Items[i]
		if id := nc.Status.ProviderID; id != "" {
			out[id[strings.LastIndex(id, "/")+1:]] = nc
		}
	}
	return out, nil
}
