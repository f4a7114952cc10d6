package capacityblock

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.capacityblock"

// ReasonCapacityBlockExpiring is the event reason on a NodeClaim deleted because its Capacity Block ends.
const ReasonCapacityBlockExpiring = "CapacityBlockExpiring"

// recheck is how often a NodeClaim whose reservation is not (yet) in its node class's status is looked at again.
const recheck = time.Minute

// Controller deletes NodeClaims in Capacity Blocks ahead of the block's end.
type Controller struct{ deps deps.Deps }

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register watches NodeClaims in Capacity Blocks.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	inBlock := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[awsv1.LabelCapacityReservationType] == string(awsv1.CapacityReservationTypeCapacityBlock)
	})
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(inBlock)).
		Complete(c)
}

// Decide returns when a NodeClaim in reservation id should be drained, given its node class's reservations:
// DrainAt of the reservation; now when the reservation is expiring or no longer listed (EC2 is reclaiming it
// or has); ok false when the reservation has no end.
func Decide(id string, reservations []awsv1.CapacityReservation, now time.Time) (at time.Time, ok bool) {
	for _, r := range reservations {
		if r.ID != id {
			continue
		}
		if r.State == awsv1.CapacityReservationStateExpiring {
			return now, true
		}
		at := capacityreservation.DrainAt(r)
		return at, !at.IsZero()
	}
	return now, true
}

// Reconcile deletes the NodeClaim once its drain time has come, or requeues for that time.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	id := nc.Labels[awsv1.LabelCapacityReservationID]
	if !nc.DeletionTimestamp.IsZero() || id == "" || nc.Spec.NodeClassRef == nil {
		return reconcile.Result{}, nil
	}
	class := &awsv1.EC2NodeClass{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}, class); err != nil {
		return reconcile.Result{RequeueAfter: recheck}, client.IgnoreNotFound(err)
	}
	if len(class.Status.CapacityReservations) == 0 {
		// Not resolved yet (or the gate was just turned on): do not read "missing" as "ended".
		return reconcile.Result{RequeueAfter: recheck}, nil
	}
	now := c.deps.Clock.Now()
	at, ok := Decide(id, class.Status.CapacityReservations, now)
	if !ok {
		return reconcile.Result{}, nil
	}
	if now.Before(at) {
		return reconcile.Result{RequeueAfter: at.Sub(now)}, nil
	}
	msg := fmt.Sprintf("Capacity Block %s ends soon: draining the node before EC2 reclaims its instances", id)
	log.FromContext(ctx).Info("deleting NodeClaim in an ending Capacity Block", "nodeclaim", nc.Name, "capacity-reservation-id", id)
	if c.deps.Recorder != nil {
		c.deps.Recorder.Event(nc, corev1.EventTypeNormal, ReasonCapacityBlockExpiring, msg)
	}
	if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err)
	}
	return reconcile.Result{}, nil
}
