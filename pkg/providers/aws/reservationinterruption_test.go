package aws_test

import (
	"context"
	"testing"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestReservationInterruptionTakesNoMoreLaunches: once the interruption queue is told EC2 is reclaiming a capacity
// reservation (its interruption warning), the reservation's offerings are unavailable until the provider reads
// the reservation from EC2 again.
func TestReservationInterruptionTakesNoMoreLaunches(t *testing.T) {
	w := newWorld(t)
	p := w.providerWith(t, "uid-a", reservedGate(true))
	ctx := context.Background()
	nc, crID := w.mlReservation(t, p)
	var err error
	if nc.Status.CapacityReservations, err = p.ResolveCapacityReservations(ctx, nc); err != nil {
		t.Fatal(err)
	}
	p.resolve(t, nc)
	available := func() bool {
		t.Helper()
		its, err := p.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				if o.CapacityType == cloudprovider.CapacityTypeReserved && o.ReservationID == crID && o.Available {
					return true
				}
			}
		}
		return false
	}
	if !available() {
		t.Fatalf("reservation %s offers nothing before the interruption", crID)
	}
	var marker cloudprovider.ReservationMarker = p.InterruptionQueue("dovetail")
	marker.MarkReservationUnavailable(ctx, crID)
	if available() {
		t.Errorf("reservation %s still offered after its interruption warning", crID)
	}
	// Reading the reservation from EC2 again counts its room anew.
	if _, err := p.ResolveCapacityReservations(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if !available() {
		t.Errorf("reservation %s not offered after EC2 reported its room again", crID)
	}
}
