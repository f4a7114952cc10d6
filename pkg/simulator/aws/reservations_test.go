package awssim

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"
)

// reservedTemplate creates a launch template targeting a capacity reservation.
func (e *env) reservedTemplate(t *testing.T, name, crID string) {
	t.Helper()
	ctx := context.Background()
	param, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: param.Parameter.Value,
			CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
				CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(crID)}}}}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) reservation(t *testing.T, id string) ec2types.CapacityReservation {
	t.Helper()
	out, err := e.ec2.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil || len(out.CapacityReservations) != 1 {
		t.Fatalf("describe %s = %+v, %v", id, out, err)
	}
	return out.CapacityReservations[0]
}

func TestCapacityReservationFilters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.subnetIDs(t) // the SDK's account exists before reservations are added to it
	a, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 2,
		Tags: map[string]string{"team": "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	end := e.clock.Now().Add(4 * time.Hour)
	b, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2b", Count: 1,
		ReservationType: "capacity-block", EndTime: &end, OwnerID: "111122223333", InstanceMatchCriteria: "targeted", Interruptible: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 1,
		ReservationType: "capacity-block"}); err == nil {
		t.Error("a capacity block without an end time was accepted")
	}
	for _, tc := range []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"tag", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"ml"}}}, []string{a}},
		{"owner", []ec2types.Filter{{Name: aws.String("owner-id"), Values: []string{"111122223333"}}}, []string{b}},
		{"active", []ec2types.Filter{{Name: aws.String("state"), Values: []string{"active"}}}, []string{a, b}},
		{"reservation type", []ec2types.Filter{{Name: aws.String("reservation-type"), Values: []string{"capacity-block"}}}, []string{b}},
	} {
		out, err := e.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: tc.filters})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, cr := range out.CapacityReservations {
			got = append(got, aws.ToString(cr.CapacityReservationId))
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	cb := e.reservation(t, b)
	if cb.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || aws.ToString(cb.OwnerId) != "111122223333" ||
		!aws.ToBool(cb.Interruptible) || cb.EndDate == nil || !cb.EndDate.Equal(end.Truncate(time.Second)) {
		t.Errorf("capacity block = %+v", cb)
	}
}

func TestCapacityBlockLaunchAndExpiry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.subnetIDs(t)
	end := e.clock.Now().Add(2 * time.Hour)
	cb, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 1,
		ReservationType: "capacity-block", EndTime: &end})
	if err != nil {
		t.Fatal(err)
	}
	e.reservedTemplate(t, "lt-block", cb)
	out, err := e.ec2.CreateFleet(ctx, fleetInput("lt-block", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", e.subnetIDs(t)["us-west-2a"])))
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterCombination" {
		t.Fatalf("on-demand fleet into a capacity block = %+v, %v", out.Errors, err)
	}
	id := launchOne(t, e, "lt-block", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeCapacityBlock)
	if n := aws.ToInt32(e.reservation(t, cb).AvailableInstanceCount); n != 0 {
		t.Errorf("available after launch = %d, want 0", n)
	}
	// 31 minutes before the end EC2 is reclaiming the block: the instance shuts down and nothing new launches.
	e.advance(end.Sub(e.clock.Now()) - 31*time.Minute)
	if st := e.instanceState(t, id); st != "running" {
		t.Errorf("state 31 min before the end = %s, want running", st)
	}
	e.advance(2 * time.Minute)
	if st := e.instanceState(t, id); st != "shutting-down" && st != "terminated" {
		t.Errorf("state 29 min before the end = %s, want shutting-down", st)
	}
	e.advance(30 * time.Minute)
	if r := e.reservation(t, cb); r.State != ec2types.CapacityReservationStateExpired || aws.ToInt32(r.AvailableInstanceCount) != 0 {
		t.Errorf("after the end: state %s available %d, want expired 0", r.State, aws.ToInt32(r.AvailableInstanceCount))
	}
}

func TestOpenReservationUsedByPlainOnDemand(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-plain", "x86_64", "")
	cr, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 1, InstanceMatchCriteria: "open"})
	if err != nil {
		t.Fatal(err)
	}
	first := launchOne(t, e, "lt-plain", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	second := launchOne(t, e, "lt-plain", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	got := map[string]string{}
	for _, id := range []string{first, second} {
		d, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		got[id] = aws.ToString(d.Reservations[0].Instances[0].CapacityReservationId)
	}
	if d := cmp.Diff(map[string]string{first: cr, second: ""}, got); d != "" {
		t.Errorf("reservation per instance (-want +got):\n%s", d)
	}
	if n := aws.ToInt32(e.reservation(t, cr).AvailableInstanceCount); n != 0 {
		t.Errorf("available while used = %d, want 0", n)
	}
	if _, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{first}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5 && e.instanceState(t, first) != "terminated"; i++ {
		e.advance(time.Minute)
	}
	if n := aws.ToInt32(e.reservation(t, cr).AvailableInstanceCount); n != 1 {
		t.Errorf("available after the instance terminated = %d, want 1", n)
	}
}

func (e *env) instanceState(t *testing.T, id string) string {
	t.Helper()
	d, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(d.Reservations) == 0 {
		t.Fatalf("describe %s: %v", id, err)
	}
	return string(d.Reservations[0].Instances[0].State.Name)
}
