package aws_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// launch creates n instances through the provider and returns their ids.
func launch(t *testing.T, p *provider, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		created, err := p.Create(context.Background(), claim(fmt.Sprintf("default-%05d", i), "m5.large"))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		id, err := instance.ParseProviderID(created.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestUnhealthyInstancesAgainstSimulator: impaired instance and system checks and scheduled events are found in
// three DescribeInstanceStatus calls whatever the number of instances, each instance once, with its failing checks
// and their start times; healthy instances are left out.
func TestUnhealthyInstancesAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	ids := launch(t, p, 5)
	w.clock.Step(time.Minute) // pending -> running
	w.sim.Step(context.Background())
	since := w.clock.Now().Add(-5 * time.Minute)
	notBefore := w.clock.Now().Add(48 * time.Hour)
	for id, req := range map[string]awssim.InstanceStatusRequest{
		ids[0]: {InstanceStatus: "impaired", ImpairedSince: &since},
		ids[1]: {SystemStatus: "impaired", InstanceStatus: "impaired", ImpairedSince: &since},
		ids[2]: {Events: []awssim.ScheduledEventRequest{{Code: "instance-retirement", NotBefore: &notBefore}}},
	} {
		if err := w.sim.SetInstanceStatus(id, req); err != nil {
			t.Fatal(err)
		}
	}
	before := w.sim.Calls()["DescribeInstanceStatus"]
	got, err := p.UnhealthyInstances(context.Background())
	if err != nil {
		t.Fatalf("UnhealthyInstances: %v", err)
	}
	want := []cloudprovider.InstanceStatus{
		{InstanceID: ids[0], Checks: []cloudprovider.StatusCheck{{Category: cloudprovider.StatusCategoryInstance, Name: "reachability", ImpairedSince: since}}},
		{InstanceID: ids[1], Checks: []cloudprovider.StatusCheck{
			{Category: cloudprovider.StatusCategoryInstance, Name: "reachability", ImpairedSince: since},
			{Category: cloudprovider.StatusCategorySystem, Name: "reachability", ImpairedSince: since}}},
		{InstanceID: ids[2], Checks: []cloudprovider.StatusCheck{{Category: cloudprovider.StatusCategoryEvent, Name: "instance-retirement", NotBefore: notBefore}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("UnhealthyInstances (-want +got):\n%s", d)
	}
	if calls := w.sim.Calls()["DescribeInstanceStatus"] - before; calls != 3 {
		t.Errorf("%d DescribeInstanceStatus calls, want 3 (one per filter set, whatever the instance count)", calls)
	}
}

// TestDescribeInstanceStatusWire: the simulator's answer as the SDK reads it: running instances only unless
// IncludeAllInstances, filters, pagination, and details with impairedSince.
func TestDescribeInstanceStatusWire(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	ids := launch(t, p, 7)
	w.clock.Step(time.Minute)
	w.sim.Step(context.Background())
	if err := w.sim.SetInstanceStatus(ids[3], awssim.InstanceStatusRequest{SystemStatus: "impaired"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var seen []string
	pager := ec2.NewDescribeInstanceStatusPaginator(p.ec2, &ec2.DescribeInstanceStatusInput{MaxResults: awssdk.Int32(5)})
	pages := 0
	for pager.HasMorePages() {
		out, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range out.InstanceStatuses {
			seen = append(seen, awssdk.ToString(s.InstanceId))
			if s.InstanceStatus == nil || s.InstanceStatus.Status != ec2types.SummaryStatusOk || s.InstanceState.Name != ec2types.InstanceStateNameRunning {
				t.Errorf("instance %s: instance status %+v state %+v", *s.InstanceId, s.InstanceStatus, s.InstanceState)
			}
		}
	}
	if pages != 2 || len(seen) != 7 {
		t.Errorf("%d pages, %d instances; want 2 pages of the 7 instances", pages, len(seen))
	}
	out, err := p.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("system-status.status"), Values: []string{"impaired"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceStatuses) != 1 || *out.InstanceStatuses[0].InstanceId != ids[3] {
		t.Fatalf("system-status.status=impaired: %+v", out.InstanceStatuses)
	}
	sys := out.InstanceStatuses[0].SystemStatus
	if sys.Status != ec2types.SummaryStatusImpaired || len(sys.Details) != 1 || sys.Details[0].Status != ec2types.StatusTypeFailed ||
		!awssdk.ToTime(sys.Details[0].ImpairedSince).Equal(w.clock.Now()) {
		t.Errorf("system status %+v", sys)
	}
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		out, err := p.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: ids[:1], IncludeAllInstances: awssdk.Bool(all)})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(out.InstanceStatuses); (got == 1) != all {
			t.Errorf("IncludeAllInstances=%v: %d statuses of a terminating instance", all, got)
		}
	}
	if _, err := p.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("instance-status.nonsense"), Values: []string{"x"}}}}); err == nil {
		t.Error("an unknown filter was accepted")
	}
}
