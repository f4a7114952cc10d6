package aws_test

import (
	"context"
	"errors"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/test"
)

// launchFeature is what a launch through the simulator shows: the instance's placement and interfaces as
// DescribeInstances reports them and the NodeClaim's labels and EFA capacity.
type launchFeature struct {
	Type, Group, Tenancy string
	Partition            int32
	Interfaces           []string
	Prefixes             int
	ConnTrackTCP         int32
	EFA                  int64
	Labels               map[string]string
}

func launchWith(t *testing.T, p *provider, nc *awsv1.EC2NodeClass, c *karpv1.NodeClaim) launchFeature {
	t.Helper()
	nc = p.resolve(t, nc)
	if id, err := p.PlacementGroupID(context.Background(), nc); err != nil {
		t.Fatalf("PlacementGroupID: %v", err)
	} else if nc.Spec.PlacementGroupSelector != nil && id == "" {
		t.Fatalf("PlacementGroupID found no group")
	}
	created, err := p.Create(context.Background(), c)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id, err := instance.ParseProviderID(created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	inst := describe(t, p, id)
	out := launchFeature{Type: string(inst.InstanceType), Labels: map[string]string{}}
	if pl := inst.Placement; pl != nil {
		out.Group, out.Tenancy, out.Partition = awssdk.ToString(pl.GroupName), string(pl.Tenancy), awssdk.ToInt32(pl.PartitionNumber)
	}
	for _, ni := range inst.NetworkInterfaces {
		out.Interfaces = append(out.Interfaces, awssdk.ToString(ni.InterfaceType))
		out.Prefixes += len(ni.Ipv4Prefixes)
		if ni.ConnectionTrackingConfiguration != nil {
			out.ConnTrackTCP = awssdk.ToInt32(ni.ConnectionTrackingConfiguration.TcpEstablishedTimeout)
		}
	}
	q := created.Status.Capacity["vpc.amazonaws.com/efa"]
	out.EFA = q.Value()
	for _, k := range []string{awsv1.LabelPlacementGroupID, awsv1.LabelPlacementGroupPartition, awsv1.LabelInstanceTenancy} {
		if v, ok := created.Labels[k]; ok {
			out.Labels[k] = v
		}
	}
	return out
}

func createPlacementGroup(t *testing.T, p *provider, name string, strategy ec2types.PlacementStrategy, partitions int32) string {
	t.Helper()
	in := &ec2.CreatePlacementGroupInput{GroupName: awssdk.String(name), Strategy: strategy}
	if partitions > 0 {
		in.PartitionCount = awssdk.Int32(partitions)
	}
	out, err := p.ec2.CreatePlacementGroup(context.Background(), in)
	if err != nil || out.PlacementGroup == nil {
		t.Fatalf("CreatePlacementGroup: %v", err)
	}
	return awssdk.ToString(out.PlacementGroup.GroupId)
}

// TestEFAPodInClusterPlacementGroup: a NodeClaim requesting vpc.amazonaws.com/efa from a node class selecting a
// cluster placement group launches an EFA type (not the cheaper type without EFA) with one EFA interface per
// network card, in the group, labelled with its id.
func TestEFAPodInClusterPlacementGroup(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	pgID := createPlacementGroup(t, p, "training", ec2types.PlacementStrategyCluster, 0)
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "training"}
	c := test.NodeClaim("default-efa01", "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "p4d.24xlarge").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand").
		Requests(corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("1")}).Obj()
	got := launchWith(t, p, nc, c)
	want := launchFeature{Type: "p4d.24xlarge", Group: "training", Tenancy: "default",
		Interfaces: []string{"efa", "efa", "efa", "efa"}, EFA: 4,
		Labels: map[string]string{awsv1.LabelPlacementGroupID: pgID, awsv1.LabelInstanceTenancy: "default"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("launch (-want +got):\n%s", d)
	}
}

// TestPartitionGroupDedicatedTenancyAndInterfaces: a partition group takes the lowest partition the NodeClaim
// allows; a NodeClaim allowing only dedicated tenancy launches dedicated; spec.networkInterfaces with an
// efa-only interface on card 1 rule out single-card types and give one EFA; ipPrefixCount and connectionTracking
// reach the primary interface only.
func TestPartitionGroupDedicatedTenancyAndInterfaces(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	pgID := createPlacementGroup(t, p, "spread-out", ec2types.PlacementStrategyPartition, 3)
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{ID: pgID}
	nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	nc.Spec.IPPrefixCount = ptr.To[int32](2)
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](300)}
	c := test.NodeClaim("default-part1", "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "p4d.24xlarge").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand").
		Requirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "3", "2").
		Requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "dedicated").Obj()
	got := launchWith(t, p, nc, c)
	want := launchFeature{Type: "p4d.24xlarge", Group: "spread-out", Tenancy: "dedicated", Partition: 2,
		Interfaces: []string{"interface", "efa-only"}, Prefixes: 2, ConnTrackTCP: 300, EFA: 1,
		Labels: map[string]string{awsv1.LabelPlacementGroupID: pgID, awsv1.LabelPlacementGroupPartition: "2", awsv1.LabelInstanceTenancy: "dedicated"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("launch (-want +got):\n%s", d)
	}
}

// TestPlacementGroupNotFound: a selector naming no group is a NoMatch error (PlacementGroupNotFound).
func TestPlacementGroupNotFound(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	for _, sel := range []awsv1.PlacementGroupSelectorTerm{{Name: "nowhere"}, {ID: "pg-0123456789"}} {
		nc.Spec.PlacementGroupSelector = &sel
		_, err := p.PlacementGroupID(context.Background(), nc)
		var nm interface{ NoMatch() bool }
		if err == nil || !errors.As(err, &nm) || !nm.NoMatch() {
			t.Errorf("%+v: PlacementGroupID error %v, want a no-match error", sel, err)
		}
	}
}

// TestPlacementGroupDrift: a node launched into the group its node class selects has not drifted; once the node
// class selects another group it has, by the static hash (NodeClassDrift) and, for a NodeClaim stamped with another
// hash version, by its placement-group-id label (PlacementGroupDrift), in Karpenter's order.
func TestPlacementGroupDrift(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	createPlacementGroup(t, p, "first", ec2types.PlacementStrategyCluster, 0)
	createPlacementGroup(t, p, "second", ec2types.PlacementStrategyCluster, 0)
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "first"}
	nc = p.resolve(t, nc)
	ctx := context.Background()
	created, err := p.Create(ctx, claim("default-drift", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if r, err := p.IsDrifted(ctx, created); err != nil || r != "" {
		t.Fatalf("IsDrifted right after launch = %q, %v", r, err)
	}
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "second"}
	if err := p.kube.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if r, err := p.IsDrifted(ctx, created); err != nil || r != karpv1.ReasonNodeClassDrift {
		t.Errorf("IsDrifted after the selector changed = %q, %v; want %s", r, err, karpv1.ReasonNodeClassDrift)
	}
	restamped := created.DeepCopy()
	restamped.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "v0"
	if r, err := p.IsDrifted(ctx, restamped); err != nil || r != karpv1.ReasonPlacementGroupDrift {
		t.Errorf("IsDrifted of a NodeClaim with another hash version = %q, %v; want %s", r, err, karpv1.ReasonPlacementGroupDrift)
	}
}

// TestPlacementGroupAnswersLastAMinute: a group made after the node class was found wanting is seen once the
// minute the answer is kept for has passed.
func TestPlacementGroupAnswersLastAMinute(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "later"}
	ctx := context.Background()
	if _, err := p.PlacementGroupID(ctx, nc); err == nil {
		t.Fatal("PlacementGroupID found a group before it was made")
	}
	id := createPlacementGroup(t, p, "later", ec2types.PlacementStrategySpread, 0)
	if _, err := p.PlacementGroupID(ctx, nc); err == nil {
		t.Error("PlacementGroupID asked EC2 again within the minute")
	}
	w.clock.Step(61 * time.Second)
	if got, err := p.PlacementGroupID(ctx, nc); err != nil || got != id {
		t.Errorf("PlacementGroupID after a minute = %q, %v; want %s", got, err, id)
	}
}
