package capacityreservation

import (
	"sort"
	"time"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// PriceDivisor divides a type's on-demand price to price its reserved offerings, as Karpenter does: the
// capacity is already paid for, so it is nearly free and always chosen first, while bigger reserved types
// still cost more than smaller ones (consolidation keeps a meaningful order).
const PriceDivisor = 10_000_000.0

// Price is the hourly price of a reserved offering of a type whose on-demand price is onDemand.
func Price(onDemand float64) float64 { return onDemand / PriceDivisor }

// BlockReclaimLead is how long before a Capacity Block's end EC2 begins terminating its instances; from
// then on the reservation is "expiring" and takes no new launches.
const BlockReclaimLead = 30 * time.Minute

// DrainLead is how long before a Capacity Block's end Dovetail starts draining its nodes: ten minutes before
// EC2 begins reclaiming, when EC2 sends its warning (Karpenter's lead time).
const DrainLead = BlockReclaimLead + 10*time.Minute

// DrainAt is when a node in a reservation ending at end is drained; zero when the reservation does not end
// or is not a Capacity Block (a default reservation's instances continue as on-demand after it ends).
func DrainAt(r awsv1.CapacityReservation) time.Time {
	if r.ReservationType != awsv1.CapacityReservationTypeCapacityBlock || r.EndTime == nil {
		return time.Time{}
	}
	return r.EndTime.Add(-DrainLead)
}

// State is the status state of a reservation at now: expiring once EC2 reclaims a Capacity Block, else active.
func State(reservationType awsv1.CapacityReservationType, end *time.Time, now time.Time) awsv1.CapacityReservationState {
	if reservationType == awsv1.CapacityReservationTypeCapacityBlock && end != nil && !now.Before(end.Add(-BlockReclaimLead)) {
		return awsv1.CapacityReservationStateExpiring
	}
	return awsv1.CapacityReservationStateActive
}

// OfferingsInput is what Offerings builds reserved offerings from.
type OfferingsInput struct {
	// Reservations are the node class's resolved reservations.
	Reservations []awsv1.CapacityReservation
	// OnDemand maps an instance type to its on-demand price; a type without one gets price zero.
	OnDemand map[string]float64
	// Available maps a reservation id to the instances it can still take.
	Available func(id string) int
	// Zones are the zones the node class has subnets in.
	Zones map[string]bool
}

// Offerings returns the reserved offerings per instance type, sorted by reservation id. An offering is
// available while its reservation is active, has room and lies in one of the node class's zones.
func Offerings(in OfferingsInput) map[string][]cloudprovider.Offering {
	out := map[string][]cloudprovider.Offering{}
	rs := append([]awsv1.CapacityReservation(nil), in.Reservations...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	for _, r := range rs {
		n := 0
		if in.Available != nil {
			n = in.Available(r.ID)
		}
		rt := r.ReservationType
		if rt == "" {
			rt = awsv1.CapacityReservationTypeDefault
		}
		out[r.InstanceType] = append(out[r.InstanceType], cloudprovider.Offering{
			Zone: r.AvailabilityZone, CapacityType: cloudprovider.CapacityTypeReserved,
			Price:         Price(in.OnDemand[r.InstanceType]),
			Available:     n > 0 && r.State != awsv1.CapacityReservationStateExpiring && in.Zones[r.AvailabilityZone],
			ReservationID: r.ID, ReservationType: string(rt), Interruptible: r.Interruptible, ReservationCapacity: n,
		})
	}
	return out
}
