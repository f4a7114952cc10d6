package interruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/interruption"
)

// Name is the controller's name.
const Name = "interruption"

// Event reasons besides the per-message ones in pkg/interruption.
const (
	ReasonInvalidPolicy   = "InvalidInterruptionPolicy"
	ReasonInvalidDeleteAt = "InvalidInterruptionDeleteAt"
	metricTypeMalformed   = "malformed"
)

// Back-off after a failed receive: doubled per consecutive failure, from minBackoff up to maxBackoff.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
	// seenTTL is how long a message id is remembered (foreign messages are logged and counted once).
	seenTTL = time.Hour
)

// Controller polls the interruption queue; it runs on the leader only.
type Controller struct {
	deps  deps.Deps
	queue cloudprovider.InterruptionQueue

	mu   sync.Mutex
	seen map[string]time.Time
}

// NewController builds the controller. It does nothing unless INTERRUPTION_QUEUE is set.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, queue: d.InterruptionQueue, seen: map[string]time.Time{}}
}

// Register adds the polling loop to the manager, or nothing when INTERRUPTION_QUEUE is empty.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.deps.Settings == nil || c.deps.Settings.InterruptionQueue == "" {
		return nil
	}
	if c.queue == nil {
		return fmt.Errorf("INTERRUPTION_QUEUE is %q but no interruption queue was built", c.deps.Settings.InterruptionQueue)
	}
	return m.Add(manager.RunnableFunc(c.run))
}

func (c *Controller) run(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(Name))
	log.FromContext(ctx).Info("watching the interruption queue", "queue", c.deps.Settings.InterruptionQueue)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if err := c.DeleteDue(ctx); err != nil && ctx.Err() == nil {
			deps.LogError(ctx, err, "deleting nodeclaims whose scheduled drain is due")
		}
		msgs, err := c.queue.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			deps.LogError(ctx, err, "receiving from the interruption queue", "queue", c.deps.Settings.InterruptionQueue,
				"retry-in", backoff.String())
			select {
			case <-ctx.Done():
				return nil
			case <-c.deps.Clock.After(backoff):
			}
			continue
		}
		backoff = 0
		if err := c.Handle(ctx, msgs); err != nil && ctx.Err() == nil {
			deps.LogError(ctx, err, "handling interruption messages")
		}
	}
	return nil
}

// Handle acts on a batch of received messages. A message whose handling fails stays in the queue and comes back
// after its visibility timeout; the others are handled regardless.
func (c *Controller) Handle(ctx context.Context, msgs []cloudprovider.QueueMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	owned, err := c.nodeClaimsByInstanceID(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range msgs {
		if err := c.handle(ctx, m, owned); err != nil {
			errs = append(errs, fmt.Errorf("message %s: %w", m.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) handle(ctx context.Context, qm cloudprovider.QueueMessage, owned map[string]*karpv1.NodeClaim) error {
	logger := log.FromContext(ctx).WithValues("message-id", qm.ID)
	msg, err := interruption.Parse(qm.Body)
	if err != nil {
		c.deps.Metrics.InterruptionReceivedMessages.WithLabelValues(metricTypeMalformed).Inc()
		// No cluster can act on it: drop it rather than receive it again forever.
		logger.Error(err, "dropping a malformed interruption message")
		return c.delete(ctx, qm)
	}
	c.deps.Metrics.InterruptionReceivedMessages.WithLabelValues(msg.MetricLabel()).Inc()
	if !qm.SentAt.IsZero() {
		c.deps.Metrics.InterruptionMessageQueueDuration.Observe(max(c.deps.Clock.Since(qm.SentAt), 0).Seconds())
	}
	logger = logger.WithValues("message-type", string(msg.Kind), "instance-ids", msg.InstanceIDs)
	var ours []*karpv1.NodeClaim
	for _, id := range msg.InstanceIDs {
		if nc, ok := owned[id]; ok {
			ours = append(ours, nc)
		}
	}
	switch {
	case len(msg.InstanceIDs) == 0:
		logger.Info("dropping an interruption message that names no instance", "detail-type", msg.DetailType)
		return c.delete(ctx, qm)
	case len(ours) == 0:
		if c.firstSight("foreign/" + qm.ID) {
			c.deps.Metrics.InterruptionForeignMessages.Inc()
			logger.Info("leaving an interruption message about instances this cluster does not own in the queue")
		}
		return nil
	}
	if c.firstSight("handled/" + qm.ID) {
		for _, nc := range ours {
			if err := c.act(ctx, msg, nc); err != nil {
				c.forget("handled/" + qm.ID)
				return err
			}
		}
	}
	if len(ours) < len(msg.InstanceIDs) {
		// Some instances belong to another cluster sharing the queue: leave the message for it.
		logger.Info("acted on this cluster's instances; leaving the message for the others", "owned", len(ours))
		return nil
	}
	return c.delete(ctx, qm)
}

func (c *Controller) delete(ctx context.Context, qm cloudprovider.QueueMessage) error {
	if err := c.queue.Delete(ctx, qm); err != nil {
		return err
	}
	c.deps.Metrics.InterruptionDeletedMessages.Inc()
	return nil
}

// act applies the NodePool's policy to one NodeClaim.
func (c *Controller) act(ctx context.Context, msg interruption.Message, nc *karpv1.NodeClaim) error {
	policy, err := c.policy(ctx, nc.NodePoolName())
	if err != nil {
		return err
	}
	var tgp *time.Duration
	if nc.Spec.TerminationGracePeriod != nil {
		tgp = &nc.Spec.TerminationGracePeriod.Duration
	}
	d := interruption.Decide(msg, policy, tgp, c.deps.Clock.Now())
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "node", nc.Status.NodeName, "nodepool", nc.NodePoolName(),
		"action", string(d.Action))
	if d.MarkOfferingUnavailable {
		c.queue.MarkOfferingUnavailable(ctx, "SpotInterruption", nc.Labels[corev1.LabelInstanceTypeStable],
			nc.Labels[corev1.LabelTopologyZone], karpv1.CapacityTypeSpot)
	}
	if m, ok := c.queue.(cloudprovider.ReservationMarker); ok && d.MarkReservationUnavailable {
		m.MarkReservationUnavailable(ctx, nc.Labels[awsv1.LabelCapacityReservationID])
	}
	alreadyDeleting := nc.DeletionTimestamp != nil
	switch d.Action {
	case interruption.ActionIgnore:
		return nil
	case interruption.ActionDelete:
		if err := c.deleteNodeClaim(ctx, nc, interruption.MetricReason(msg)); err != nil {
			return err
		}
	case interruption.ActionDeleteAt:
		if err := c.scheduleDelete(ctx, nc, d.At); err != nil {
			return err
		}
	}
	c.event(ctx, nc, interruption.EventType(d.Reason), d.Reason, d.Message)
	if d.Action == interruption.ActionDelete && !alreadyDeleting {
		c.event(ctx, nc, corev1.EventTypeWarning, karpv1.EventReasonTerminatingOnInterruption,
			"Draining and deleting the NodeClaim for an interruption ("+d.Reason+")")
	}
	logger.Info("handled interruption message", "reason", d.Reason, "detail", d.Message)
	return nil
}

// policy reads the NodePool's policy, warning on the NodePool about invalid annotation values. A NodePool that
// is gone has the default policy.
func (c *Controller) policy(ctx context.Context, name string) (interruption.Policy, error) {
	if name == "" {
		return interruption.DefaultPolicy(), nil
	}
	np := &karpv1.NodePool{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return interruption.DefaultPolicy(), nil
		}
		return interruption.Policy{}, fmt.Errorf("reading nodepool %s: %w", name, err)
	}
	p, invalid := interruption.PolicyFromAnnotations(np.Annotations)
	for _, i := range invalid {
		c.deps.Recorder.Event(np, corev1.EventTypeWarning, ReasonInvalidPolicy, i.Message())
		log.FromContext(ctx).Info("invalid interruption policy annotation; using the default", "nodepool", name,
			"annotation", i.Key, "value", i.Value, "default", i.Default)
	}
	return p, nil
}

// deleteNodeClaim deletes the NodeClaim through the normal deletion path (the termination controllers drain the
// node, then terminate the instance).
func (c *Controller) deleteNodeClaim(ctx context.Context, nc *karpv1.NodeClaim, metricReason string) error {
	if nc.DeletionTimestamp != nil {
		return nil
	}
	uid := nc.UID
	if err := c.deps.Client.Delete(ctx, nc, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
	}
	deps.CountDisrupted(ctx, c.deps, nc, metricReason, "")
	return nil
}

// scheduleDelete records on the NodeClaim when to delete it, keeping an earlier time already recorded.
func (c *Controller) scheduleDelete(ctx context.Context, nc *karpv1.NodeClaim, at time.Time) error {
	if old, err := deleteAt(nc); err == nil && !old.IsZero() && !old.After(at) {
		return nil
	}
	patch := client.MergeFrom(nc.DeepCopy())
	updated := nc.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[interruption.DeleteAtAnnotation] = at.UTC().Format(time.RFC3339)
	if err := c.deps.Client.Patch(ctx, updated, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording the scheduled deletion of nodeclaim %s: %w", nc.Name, err))
	}
	return nil
}

func deleteAt(nc *karpv1.NodeClaim) (time.Time, error) {
	v, ok := nc.Annotations[interruption.DeleteAtAnnotation]
	if !ok {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("annotation %s=%q is not an RFC 3339 time: %w", interruption.DeleteAtAnnotation, v, err)
	}
	return t, nil
}

// DeleteDue deletes the NodeClaims whose recorded scheduled-change drain time has come.
func (c *Controller) DeleteDue(ctx context.Context) error {
	list := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	now := c.deps.Clock.Now()
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.DeletionTimestamp != nil {
			continue
		}
		at, err := deleteAt(nc)
		if err != nil {
			if c.firstSight("invalid-delete-at/" + string(nc.UID)) {
				c.deps.Recorder.Event(nc, corev1.EventTypeWarning, ReasonInvalidDeleteAt, err.Error())
			}
			continue
		}
		if at.IsZero() || now.Before(at) {
			continue
		}
		if err := c.deleteNodeClaim(ctx, nc, karpv1.MetricReasonScheduledChange); err != nil {
			errs = append(errs, err)
			continue
		}
		msg := fmt.Sprintf("Scheduled change: the drain time %s has come; draining and deleting the NodeClaim", at.UTC().Format(time.RFC3339))
		c.event(ctx, nc, corev1.EventTypeWarning, interruption.ReasonScheduledChange, msg)
		c.event(ctx, nc, corev1.EventTypeWarning, karpv1.EventReasonTerminatingOnInterruption,
			"Draining and deleting the NodeClaim for an interruption ("+interruption.ReasonScheduledChange+")")
		log.FromContext(ctx).Info("deleted nodeclaim before its scheduled change", "nodeclaim", nc.Name,
			"node", nc.Status.NodeName, "nodepool", nc.NodePoolName(), "delete-at", at.UTC().Format(time.RFC3339))
	}
	return errors.Join(errs...)
}

// event records an event on the NodeClaim and on its Node, if any.
func (c *Controller) event(ctx context.Context, nc *karpv1.NodeClaim, eventType, reason, message string) {
	c.deps.Recorder.Event(nc, eventType, reason, message)
	if nc.Status.NodeName == "" {
		return
	}
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return
	}
	c.deps.Recorder.Event(node, eventType, reason, message)
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
		id := nc.Status.ProviderID
		if id == "" {
			continue
		}
		out[id[strings.LastIndex(id, "/")+1:]] = nc
	}
	return out, nil
}

// firstSight records key and reports whether it was new; keys older than seenTTL are forgotten.
func (c *Controller) firstSight(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.deps.Clock.Now()
	for k, t := range c.seen {
		if now.Sub(t) > seenTTL {
			delete(c.seen, k)
		}
	}
	if _, ok := c.seen[key]; ok {
		return false
	}
	c.seen[key] = now
	return true
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seen, key)
}
