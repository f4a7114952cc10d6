package instance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
)

// failingEC2 answers CreateFleet with fleetOut and TerminateInstances with terminateErr; other calls are not made.
type failingEC2 struct {
	sdk.EC2API
	fleetOut     *ec2.CreateFleetOutput
	terminateErr error
}

func (f *failingEC2) CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	return f.fleetOut, nil
}

func (f *failingEC2) TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	return &ec2.TerminateInstancesOutput{}, f.terminateErr
}

func fleetErr(code, message, instanceType, subnet, zone string) ec2types.CreateFleetError {
	o := &ec2types.FleetLaunchTemplateOverrides{InstanceType: ec2types.InstanceType(instanceType), SubnetId: aws.String(subnet)}
	if zone != "" {
		o.AvailabilityZone = aws.String(zone)
	}
	return ec2types.CreateFleetError{ErrorCode: aws.String(code), ErrorMessage: aws.String(message),
		LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{Overrides: o}}
}

// TestLaunchFailuresReported: each error of a CreateFleet answer is reported once, with the launch's capacity
// type, the offering's zone and zone ID and Karpenter's reason.
func TestLaunchFailuresReported(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	api := &failingEC2{fleetOut: &ec2.CreateFleetOutput{Errors: []ec2types.CreateFleetError{
		fleetErr("InsufficientInstanceCapacity", "no capacity", "m5.large", "subnet-a", "us-west-2a"),
		fleetErr("VcpuLimitExceeded", "quota", "m5.large", "subnet-b", ""),
	}}}
	p := NewProvider(api, tags.Cluster{Name: "c", UID: "u"}, unavailable.New(clk, unavailable.DefaultTTL), clk, BatchWindow{})
	var got []LaunchFailure
	p.OnLaunchFailure = func(l LaunchFailure) { got = append(got, l) }
	r := FleetRequest{CapacityType: "spot", Choices: []Choice{
		{InstanceType: "m5.large", SubnetID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"},
		{InstanceType: "m5.large", SubnetID: "subnet-b", Zone: "us-west-2b", ZoneID: "usw2-az2"},
	}}
	if _, err := p.createFleet(context.Background(), &ec2.CreateFleetInput{}, []*launchRequest{{r: r}}); err != nil {
		t.Fatal(err)
	}
	want := []LaunchFailure{
		{CapacityType: "spot", Zone: "us-west-2a", ZoneID: "usw2-az1", Reason: "LaunchFailed"},
		{CapacityType: "spot", Zone: "us-west-2b", ZoneID: "usw2-az2", Reason: "VCPULimitExceeded"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("launch failures (-want +got):\n%s", diff)
	}
}

// TestTerminationFailureReported: a failed TerminateInstances call is reported; a successful one is not.
func TestTerminationFailureReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"fails", errors.New("UnauthorizedOperation: no"), 1},
		{"succeeds", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
			p := NewProvider(&failingEC2{terminateErr: tc.err}, tags.Cluster{Name: "c", UID: "u"}, unavailable.New(clk, unavailable.DefaultTTL), clk, BatchWindow{})
			p.remember("i-1") // known as this cluster's: no DescribeInstances call
			n := 0
			err := p.TerminateReporting(context.Background(), "i-1", func() { n++ })
			if (err != nil) != (tc.err != nil) {
				t.Fatalf("err = %v", err)
			}
			if n != tc.want {
				t.Errorf("reported %d failures, want %d", n, tc.want)
			}
		})
	}
}

func TestProviderIDZone(t *testing.T) {
	for id, want := range map[string]string{
		"aws:///us-west-2a/i-0123": "us-west-2a",
		"aws:///i-0123":            "",
		"kwok://node-1":            "",
		"":                         "",
	} {
		if got := ProviderIDZone(id); got != want {
			t.Errorf("ProviderIDZone(%q) = %q, want %q", id, got, want)
		}
	}
}
