package capacityreservation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func TestOfferings(t *testing.T) {
	rs := []awsv1.CapacityReservation{
		{ID: "cr-b", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", ReservationType: awsv1.CapacityReservationTypeCapacityBlock, Interruptible: true},
		{ID: "cr-a", InstanceType: "m5.large", AvailabilityZone: "us-west-2a"},
		{ID: "cr-c", InstanceType: "m5.xlarge", AvailabilityZone: "us-west-2c"},
		{ID: "cr-d", InstanceType: "m5.xlarge", AvailabilityZone: "us-west-2a", State: awsv1.CapacityReservationStateExpiring},
		{ID: "cr-e", InstanceType: "m5.2xlarge", AvailabilityZone: "us-west-2a"},
	}
	room := map[string]int{"cr-a": 2, "cr-b": 0, "cr-c": 1, "cr-d": 3, "cr-e": 1}
	got := Offerings(OfferingsInput{
		Reservations: rs, OnDemand: map[string]float64{"m5.large": 0.096, "m5.xlarge": 0.192},
		Available: func(id string) int { return room[id] }, Zones: map[string]bool{"us-west-2a": true, "us-west-2b": true},
	})
	off := func(id, zone, rt string, price float64, avail bool, n int, intr bool) cloudprovider.Offering {
		return cloudprovider.Offering{Zone: zone, CapacityType: cloudprovider.CapacityTypeReserved, Price: price, Available: avail,
			ReservationID: id, ReservationType: rt, Interruptible: intr, ReservationCapacity: n}
	}
	want := map[string][]cloudprovider.Offering{
		"m5.large": {
			off("cr-a", "us-west-2a", "default", 0.096/1e7, true, 2, false),
			off("cr-b", "us-west-2a", "capacity-block", 0.096/1e7, false, 0, true), // full
		},
		"m5.xlarge": {
			off("cr-c", "us-west-2c", "default", 0.192/1e7, false, 1, false), // no subnet in the zone
			off("cr-d", "us-west-2a", "default", 0.192/1e7, false, 3, false), // expiring
		},
		"m5.2xlarge": {off("cr-e", "us-west-2a", "default", 0, true, 1, false)}, // no on-demand price: free
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("offerings (-want +got):\n%s", d)
	}
	// Reserved is always cheaper than the same type on demand, and a bigger reserved type costs more.
	if p := Price(0.096); p <= 0 || p >= 0.096 || p >= Price(0.192) {
		t.Errorf("Price(0.096) = %g", p)
	}
}

func TestStateAndDrain(t *testing.T) {
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		rt   awsv1.CapacityReservationType
		now  time.Time
		want awsv1.CapacityReservationState
	}{
		{"block before reclaim", awsv1.CapacityReservationTypeCapacityBlock, end.Add(-31 * time.Minute), awsv1.CapacityReservationStateActive},
		{"block reclaiming", awsv1.CapacityReservationTypeCapacityBlock, end.Add(-30 * time.Minute), awsv1.CapacityReservationStateExpiring},
		{"default near its end", awsv1.CapacityReservationTypeDefault, end.Add(-time.Minute), awsv1.CapacityReservationStateActive},
	} {
		if got := State(tc.rt, &end, tc.now); got != tc.want {
			t.Errorf("%s: state %s, want %s", tc.name, got, tc.want)
		}
	}
	mt := metav1.NewTime(end)
	if got := DrainAt(awsv1.CapacityReservation{ReservationType: awsv1.CapacityReservationTypeCapacityBlock, EndTime: &mt}); !got.Equal(end.Add(-40 * time.Minute)) {
		t.Errorf("DrainAt(block) = %s, want 40 minutes before the end", got)
	}
	if got := DrainAt(awsv1.CapacityReservation{ReservationType: awsv1.CapacityReservationTypeDefault, EndTime: &mt}); !got.IsZero() {
		t.Errorf("DrainAt(default) = %s, want zero", got)
	}
}

func TestTracker(t *testing.T) {
	tr := NewTracker()
	tr.Observe("cr-1", 2)
	if !tr.Claim("cr-1") || !tr.Claim("cr-1") || tr.Claim("cr-1") {
		t.Fatal("two claims on a reservation of 2 should succeed and the third fail")
	}
	tr.Release("cr-1") // a launch failed for another reason: its room comes back
	if got := tr.Available("cr-1"); got != 1 {
		t.Errorf("after release: %d, want 1", got)
	}
	// EC2 still reports 2 while one launch is in flight: the in-flight claim is not counted twice as room.
	tr.Observe("cr-1", 2)
	if got := tr.Available("cr-1"); got != 1 {
		t.Errorf("observe during a launch: %d, want 1", got)
	}
	tr.Launched("cr-1")
	tr.Observe("cr-1", 1)
	if got := tr.Available("cr-1"); got != 1 {
		t.Errorf("after launch and observe: %d, want 1", got)
	}
	if !tr.Claim("cr-1") {
		t.Fatal("claim failed")
	}
	tr.Exhausted("cr-1")
	if got := tr.Available("cr-1"); got != 0 || tr.Claim("cr-1") {
		t.Errorf("after EC2 said full: %d available", got)
	}
	if tr.Claim("cr-unknown") {
		t.Error("claim on an unknown reservation succeeded")
	}
}
