package aws

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
	"github.com/dovetail/dovetail/pkg/settings"
)

// ReservedCapacityEnabled reports whether the ReservedCapacity feature gate is on.
func (p *CloudProvider) ReservedCapacityEnabled() bool {
	return p.settings.FeatureEnabled(settings.FeatureReservedCapacity)
}

// ResolveCapacityReservations returns the active capacity reservations the node class selects and records
// how many instances each can still take. With the ReservedCapacity gate off it resolves nothing.
func (p *CloudProvider) ResolveCapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	if !p.ReservedCapacityEnabled() || len(nc.Spec.CapacityReservationSelectorTerms) == 0 {
		return nil, nil
	}
	resolved, err := capacityreservation.Resolve(ctx, p.clients.EC2, nc.Spec.CapacityReservationSelectorTerms, p.clock.Now())
	if err != nil {
		return nil, err
	}
	out := make([]awsv1.CapacityReservation, 0, len(resolved))
	for _, r := range resolved {
		p.reservations.Observe(r.ID, r.Available)
		out = append(out, r.CapacityReservation)
	}
	return out, nil
}

// withReservedOfferings adds the node class's reserved offerings to the instance types they are for,
// priced from each type's on-demand price. Instance types are shared and immutable: changed ones are copies.
func (p *CloudProvider) withReservedOfferings(ctx context.Context, nc *awsv1.EC2NodeClass, its []*cloudprovider.InstanceType, zones []string) []*cloudprovider.InstanceType {
	if !p.ReservedCapacityEnabled() || len(nc.Status.CapacityReservations) == 0 {
		return its
	}
	for _, r := range nc.Status.CapacityReservations {
		if !p.reservations.Known(r.ID) {
			// A fresh process (restart, dovetailctl) has not counted the room yet: ask EC2 once.
			if _, err := p.ResolveCapacityReservations(ctx, nc); err != nil {
				log.FromContext(ctx).Error(err, "counting capacity reservation room failed; reserved offerings unavailable until the next try")
				break
			}
			for _, r := range nc.Status.CapacityReservations {
				if !p.reservations.Known(r.ID) {
					p.reservations.Observe(r.ID, 0) // no longer active: no room
				}
			}
			break
		}
	}
	onDemand := map[string]float64{}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				onDemand[it.Name] = o.Price
				break
			}
		}
	}
	allowed := map[string]bool{}
	for _, z := range zones {
		allowed[z] = true
	}
	reserved := capacityreservation.Offerings(capacityreservation.OfferingsInput{
		Reservations: nc.Status.CapacityReservations, OnDemand: onDemand, Available: p.reservations.Available, Zones: allowed,
	})
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		if add := reserved[it.Name]; len(add) > 0 {
			c := *it
			c.Offerings = append(append(make([]cloudprovider.Offering, 0, len(it.Offerings)+len(add)), it.Offerings...), add...)
			out[i] = &c
		}
	}
	return out
}

// reservationOf returns the node class's status entry for a reservation id.
func reservationOf(nc *awsv1.EC2NodeClass, id string) (awsv1.CapacityReservation, bool) {
	if nc == nil {
		return awsv1.CapacityReservation{}, false
	}
	for _, r := range nc.Status.CapacityReservations {
		if r.ID == id {
			return r, true
		}
	}
	return awsv1.CapacityReservation{}, false
}
