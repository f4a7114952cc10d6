package capacityblock_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/capacityblock"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	end := metav1.NewTime(now.Add(2 * time.Hour))
	block := awsv1.CapacityReservation{ID: "cr-1", ReservationType: awsv1.CapacityReservationTypeCapacityBlock, EndTime: &end}
	expiring := block
	expiring.State = awsv1.CapacityReservationStateExpiring
	odcr := awsv1.CapacityReservation{ID: "cr-1", ReservationType: awsv1.CapacityReservationTypeDefault, EndTime: &end}
	for _, tc := range []struct {
		name   string
		rs     []awsv1.CapacityReservation
		wantAt time.Time
		wantOK bool
	}{
		{"block: 40 minutes before its end", []awsv1.CapacityReservation{block}, end.Add(-40 * time.Minute), true},
		{"expiring: now", []awsv1.CapacityReservation{expiring}, now, true},
		{"gone from the status: now", []awsv1.CapacityReservation{{ID: "cr-other"}}, now, true},
		{"default reservation: never", []awsv1.CapacityReservation{odcr}, time.Time{}, false},
	} {
		at, ok := capacityblock.Decide("cr-1", tc.rs, now)
		if ok != tc.wantOK || !at.Equal(tc.wantAt) {
			t.Errorf("%s: Decide = %s %t, want %s %t", tc.name, at, ok, tc.wantAt, tc.wantOK)
		}
	}
}
