package awssim

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestCancelCapacityReservation: a cancelled reservation is cancelled, takes no more launches, and its running
// instance stays running as a plain on-demand instance (DescribeInstances reports no reservation); cancelling
// it again, an unknown one or a Capacity Block is refused.
func TestCancelCapacityReservation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.subnetIDs(t)
	cr, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 2, InstanceMatchCriteria: "targeted"})
	if err != nil {
		t.Fatal(err)
	}
	e.reservedTemplate(t, "lt-odcr", cr)
	id := launchOne(t, e, "lt-odcr", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	e.advance(3 * time.Second)
	reservationOf := func() string {
		t.Helper()
		out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Reservations[0].Instances[0].CapacityReservationId)
	}
	if got := reservationOf(); got != cr {
		t.Fatalf("instance reservation = %q, want %s", got, cr)
	}
	out, err := e.ec2.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(cr)})
	if err != nil || !aws.ToBool(out.Return) {
		t.Fatalf("CancelCapacityReservation = %+v, %v", out, err)
	}
	if r := e.reservation(t, cr); r.State != ec2types.CapacityReservationStateCancelled || aws.ToInt32(r.AvailableInstanceCount) != 0 {
		t.Errorf("after cancel: state %s, available %d", r.State, aws.ToInt32(r.AvailableInstanceCount))
	}
	if got := reservationOf(); got != "" {
		t.Errorf("instance still in reservation %q after the cancel", got)
	}
	e.advance(time.Second)
	if st := e.instanceState(t, id); st != "running" {
		t.Errorf("instance state after the cancel = %s, want running", st)
	}
	fleet, err := e.ec2.CreateFleet(ctx, fleetInput("lt-odcr", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", e.subnetIDs(t)["us-west-2a"])))
	if err == nil && len(fleet.Instances) > 0 {
		t.Errorf("a cancelled reservation launched %+v", fleet.Instances)
	}
	end := e.clock.Now().Add(4 * time.Hour)
	block, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 1,
		ReservationType: "capacity-block", EndTime: &end, InstanceMatchCriteria: "targeted"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, code string }{{cr, "IncorrectState"}, {"cr-0123456789abcdef0", "InvalidCapacityReservationId.NotFound"}, {block, "UnsupportedOperation"}} {
		_, err := e.ec2.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(tc.id)})
		assertCode(t, err, tc.code)
	}
}
