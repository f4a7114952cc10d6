package awssim

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
)

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

type pgView struct {
	Name, Strategy, State, Spread string
	Partitions                    int32
}

// TestPlacementGroups: CreatePlacementGroup / DescribePlacementGroups / DeletePlacementGroup as the SDK reads them;
// instances launched into a group report it (and their partition) in DescribeInstances; a cluster group keeps to
// the zone of its first instance; a group in use cannot be deleted.
func TestPlacementGroups(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ids := map[string]string{}
	for _, in := range []*ec2.CreatePlacementGroupInput{
		{GroupName: aws.String("tight"), Strategy: ec2types.PlacementStrategyCluster},
		{GroupName: aws.String("parts"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3)},
		{GroupName: aws.String("apart"), Strategy: ec2types.PlacementStrategySpread,
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypePlacementGroup, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}}}},
	} {
		out, err := e.ec2.CreatePlacementGroup(ctx, in)
		if err != nil {
			t.Fatalf("CreatePlacementGroup(%s): %v", aws.ToString(in.GroupName), err)
		}
		ids[aws.ToString(in.GroupName)] = aws.ToString(out.PlacementGroup.GroupId)
	}
	if _, err := e.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("tight"), Strategy: ec2types.PlacementStrategyCluster}); errCode(err) != "InvalidPlacementGroup.Duplicate" {
		t.Errorf("duplicate name: %v, want InvalidPlacementGroup.Duplicate", err)
	}
	view := func(in *ec2.DescribePlacementGroupsInput) []pgView {
		t.Helper()
		out, err := e.ec2.DescribePlacementGroups(ctx, in)
		if err != nil {
			t.Fatalf("DescribePlacementGroups: %v", err)
		}
		var v []pgView
		for _, g := range out.PlacementGroups {
			v = append(v, pgView{aws.ToString(g.GroupName), string(g.Strategy), string(g.State), string(g.SpreadLevel), aws.ToInt32(g.PartitionCount)})
		}
		return v
	}
	all := []pgView{{"apart", "spread", "available", "rack", 0}, {"parts", "partition", "available", "", 3}, {"tight", "cluster", "available", "", 0}}
	if d := cmp.Diff(all, view(&ec2.DescribePlacementGroupsInput{})); d != "" {
		t.Errorf("all groups (-want +got):\n%s", d)
	}
	if d := cmp.Diff(all[1:2], view(&ec2.DescribePlacementGroupsInput{GroupIds: []string{ids["parts"]},
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{"available"}}}})); d != "" {
		t.Errorf("by id (-want +got):\n%s", d)
	}
	if d := cmp.Diff(all[:1], view(&ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"ml"}}}})); d != "" {
		t.Errorf("by tag (-want +got):\n%s", d)
	}
	if _, err := e.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nowhere"}}); errCode(err) != "InvalidPlacementGroup.Unknown" {
		t.Errorf("unknown name: %v, want InvalidPlacementGroup.Unknown", err)
	}

	e.launchTemplate(t, "lt-pg", "x86_64", "")
	subnets := e.subnetIDs(t)
	run := func(zone string, placement *ec2types.Placement) (ec2types.Instance, error) {
		out, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-pg")},
			InstanceType:   ec2types.InstanceTypeC5Large, SubnetId: aws.String(subnets[zone]), Placement: placement})
		if err != nil {
			return ec2types.Instance{}, err
		}
		return out.Instances[0], nil
	}
	first, err := run("us-west-2a", &ec2types.Placement{GroupName: aws.String("tight")})
	if err != nil {
		t.Fatalf("launch into the cluster group: %v", err)
	}
	if _, err := run("us-west-2b", &ec2types.Placement{GroupName: aws.String("tight")}); errCode(err) != "InvalidPlacementGroup.InUse" {
		t.Errorf("cluster group in a second zone: %v, want InvalidPlacementGroup.InUse", err)
	}
	var partitions []int32
	for range 4 {
		inst, err := run("us-west-2b", &ec2types.Placement{GroupName: aws.String("parts")})
		if err != nil {
			t.Fatalf("launch into the partition group: %v", err)
		}
		partitions = append(partitions, aws.ToInt32(inst.Placement.PartitionNumber))
	}
	pinned, err := run("us-west-2c", &ec2types.Placement{GroupName: aws.String("parts"), PartitionNumber: aws.Int32(3), Tenancy: ec2types.TenancyDedicated})
	if err != nil {
		t.Fatalf("launch into partition 3: %v", err)
	}
	if d := cmp.Diff([]int32{1, 2, 3, 1}, partitions); d != "" {
		t.Errorf("partitions of unpinned launches (-want +got):\n%s", d)
	}
	out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{aws.ToString(first.InstanceId), aws.ToString(pinned.InstanceId)}})
	if err != nil {
		t.Fatal(err)
	}
	type placed struct {
		Group, GroupID, Tenancy string
		Partition               int32
	}
	var got []placed
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			got = append(got, placed{aws.ToString(i.Placement.GroupName), aws.ToString(i.Placement.GroupId), string(i.Placement.Tenancy), aws.ToInt32(i.Placement.PartitionNumber)})
		}
	}
	want := []placed{{"tight", ids["tight"], "default", 0}, {"parts", ids["parts"], "dedicated", 3}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DescribeInstances placement (-want +got):\n%s", d)
	}
	for n := 1; n <= 8; n++ {
		_, err := run("us-west-2c", &ec2types.Placement{GroupName: aws.String("apart")})
		if n <= 7 && err != nil {
			t.Fatalf("spread launch %d: %v", n, err)
		}
		if n == 8 && errCode(err) != "InsufficientInstanceCapacity" {
			t.Errorf("eighth spread launch in one zone: %v, want InsufficientInstanceCapacity", err)
		}
	}
	if _, err := run("us-west-2a", &ec2types.Placement{GroupName: aws.String("apart")}); err != nil {
		t.Errorf("spread launch in another zone: %v", err)
	}
	if _, err := e.ec2.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("tight")}); errCode(err) != "InvalidPlacementGroup.InUse" {
		t.Errorf("deleting a group in use: %v, want InvalidPlacementGroup.InUse", err)
	}
	if _, err := e.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("unused"), Strategy: ec2types.PlacementStrategySpread, SpreadLevel: ec2types.SpreadLevelHost}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ec2.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("unused")}); err != nil {
		t.Errorf("deleting an empty group: %v", err)
	}
	if d := cmp.Diff(all, view(&ec2.DescribePlacementGroupsInput{})); d != "" {
		t.Errorf("after delete (-want +got):\n%s", d)
	}
}

// TestEFAInterfacesOnInstances: launch template interfaces reach the instance; EFA on a type without it, or a
// network card the type lacks, is refused.
func TestEFAInterfacesOnInstances(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-efa", "x86_64", "")
	subnet := e.subnetIDs(t)["us-west-2a"]
	run := func(typ ec2types.InstanceType, nis []ec2types.InstanceNetworkInterfaceSpecification) (ec2types.Instance, error) {
		in := &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-efa")}, InstanceType: typ}
		if nis == nil {
			in.SubnetId = aws.String(subnet)
		}
		in.NetworkInterfaces = nis
		out, err := e.ec2.RunInstances(ctx, in)
		if err != nil {
			return ec2types.Instance{}, err
		}
		return out.Instances[0], nil
	}
	efa := func(card int32, typ string) ec2types.InstanceNetworkInterfaceSpecification {
		return ec2types.InstanceNetworkInterfaceSpecification{NetworkCardIndex: aws.Int32(card), DeviceIndex: aws.Int32(min(card, 1)),
			InterfaceType: aws.String(typ), SubnetId: aws.String(subnet)}
	}
	inst, err := run("p4d.24xlarge", []ec2types.InstanceNetworkInterfaceSpecification{efa(0, "efa"), efa(1, "efa-only")})
	if err != nil {
		t.Fatalf("p4d with EFA: %v", err)
	}
	var types []string
	for _, ni := range inst.NetworkInterfaces {
		types = append(types, aws.ToString(ni.InterfaceType))
	}
	if d := cmp.Diff([]string{"efa", "efa-only"}, types); d != "" {
		t.Errorf("interfaces (-want +got):\n%s", d)
	}
	if _, err := run("m5.large", []ec2types.InstanceNetworkInterfaceSpecification{efa(0, "efa")}); errCode(err) != "InvalidParameterCombination" {
		t.Errorf("EFA on m5.large: %v, want InvalidParameterCombination", err)
	}
}
