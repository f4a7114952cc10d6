package zonalshift

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeARC answers GetManagedResource with the shifts set by the test, or fails.
type fakeARC struct {
	shifts []arctypes.ZonalShiftInResource
	fail   error
	calls  int
}

func (f *fakeARC) GetManagedResource(_ context.Context, _ *arczonalshift.GetManagedResourceInput, _ ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error) {
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	return &arczonalshift.GetManagedResourceOutput{ZonalShifts: f.shifts}, nil
}

func shift(zoneID string, applied bool, expiry time.Time) arctypes.ZonalShiftInResource {
	status := arctypes.AppliedStatusNotApplied
	if applied {
		status = arctypes.AppliedStatusApplied
	}
	return arctypes.ZonalShiftInResource{AwayFrom: aws.String(zoneID), AppliedStatus: status, ExpiryTime: aws.Time(expiry),
		ZonalShiftId: aws.String("zs-" + zoneID)}
}

// TestTrackerCountsAppliedUnexpiredShifts: only APPLIED shifts count, each until its expiry; a shift no longer
// listed stops counting at the next read.
func TestTrackerCountsAppliedUnexpiredShifts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	arc := &fakeARC{shifts: []arctypes.ZonalShiftInResource{
		shift("usw2-az1", true, clk.Now().Add(time.Hour)),
		shift("usw2-az2", false, clk.Now().Add(time.Hour)),
		shift("usw2-az3", true, clk.Now().Add(10*time.Minute)),
	}}
	tr := New(arc, clk, "arn:aws:eks:us-west-2:111122223333:cluster/dovetail")
	ctx := context.Background()
	if err := tr.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"usw2-az1", "usw2-az3"}, tr.ShiftedZoneIDs()); d != "" {
		t.Errorf("shifted (-want +got):\n%s", d)
	}
	clk.Step(11 * time.Minute)
	if tr.IsShifted(ctx, "usw2-az3") || !tr.IsShifted(ctx, "usw2-az1") || tr.IsShifted(ctx, "usw2-az2") {
		t.Errorf("after az3's expiry: az1 %t az2 %t az3 %t, want true false false",
			tr.IsShifted(ctx, "usw2-az1"), tr.IsShifted(ctx, "usw2-az2"), tr.IsShifted(ctx, "usw2-az3"))
	}
	arc.shifts = nil // cancelled
	if err := tr.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tr.ShiftedZoneIDs(); len(got) != 0 {
		t.Errorf("after the cancellation: %v shifted", got)
	}
}

// TestTrackerFirstReadFailureIsRetriedOncePerInterval: questions before the first successful read try a read, but
// not more than once per RefreshInterval; a failure leaves every zone usable.
func TestTrackerFirstReadFailureIsRetriedOncePerInterval(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	arc := &fakeARC{fail: errors.New("throttled")}
	tr := New(arc, clk, "arn")
	ctx := context.Background()
	for range 5 {
		if tr.IsShifted(ctx, "usw2-az1") {
			t.Fatal("a zone is shifted without any answer")
		}
	}
	if arc.calls != 1 {
		t.Errorf("%d reads for 5 questions within the interval, want 1", arc.calls)
	}
	arc.fail, arc.shifts = nil, []arctypes.ZonalShiftInResource{shift("usw2-az1", true, clk.Now().Add(time.Hour))}
	clk.Step(RefreshInterval)
	if !tr.IsShifted(ctx, "usw2-az1") || arc.calls != 2 {
		t.Errorf("after the interval: shifted %t after %d reads, want true after 2", tr.IsShifted(ctx, "usw2-az1"), arc.calls)
	}
	tr.IsShifted(ctx, "usw2-az1")
	if arc.calls != 2 {
		t.Errorf("%d reads after a successful one, want none more (the controller polls)", arc.calls)
	}
}
