package aws_test

import (
	"context"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPodTenancyAndPartitionWithoutNodePoolRequirement: the instance types of a node class in a partition group let
// the launch choose the tenancy and the partition; a pod requiring dedicated tenancy and partition 2 from a NodePool
// that names neither key gets a NodeClaim carrying both, which launches a dedicated instance in partition 2 with
// the matching labels, as Karpenter does for its undefined well-known labels.
func TestPodTenancyAndPartitionWithoutNodePoolRequirement(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	pgID := createPlacementGroup(t, p, "spread-out", ec2types.PlacementStrategyPartition, 3)
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{ID: pgID}
	nc = p.resolve(t, nc)
	ctx := context.Background()
	if _, err := p.PlacementGroupID(ctx, nc); err != nil {
		t.Fatal(err)
	}
	its, err := p.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatal(err)
	}
	var m5 *cloudprovider.InstanceType
	for _, it := range its {
		if it.Name == "m5.large" {
			m5 = it
		}
	}
	if m5 == nil {
		t.Fatal("no m5.large")
	}
	wantLaunch := map[string][]string{awsv1.LabelInstanceTenancy: {"dedicated", "default"}, awsv1.LabelPlacementGroupPartition: {"1", "2", "3"}}
	if d := cmp.Diff(wantLaunch, m5.LaunchLabels); d != "" {
		t.Fatalf("m5.large launch labels (-want +got):\n%s", d)
	}

	pool := test.SchedNodePool("default").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Requirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "on-demand").Obj()
	pod := test.SchedPod("p").Requests("1", "1Gi").NodeSelector(awsv1.LabelInstanceTenancy, "dedicated").
		NodeSelector(awsv1.LabelPlacementGroupPartition, "2").Obj()
	plan, err := scheduling.Solve(ctx, &scheduling.Snapshot{Pods: []*corev1.Pod{pod}, NodePools: []*scheduling.NodePool{pool},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": its}}, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NodeClaims) != 1 {
		t.Fatalf("plan: %d NodeClaims, unschedulable %+v", len(plan.NodeClaims), plan.Unschedulable)
	}
	b := test.NodeClaim("default-dedicated", "default")
	for _, r := range plan.NodeClaims[0].Requirements {
		b = b.Requirement(r.Key, r.Operator, r.Values...)
	}
	created, err := p.Create(ctx, b.Obj())
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id, err := instance.ParseProviderID(created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	pl := describe(t, p, id).Placement
	if pl == nil || pl.Tenancy != ec2types.TenancyDedicated || awssdk.ToInt32(pl.PartitionNumber) != 2 ||
		created.Labels[awsv1.LabelInstanceTenancy] != "dedicated" || created.Labels[awsv1.LabelPlacementGroupPartition] != "2" {
		t.Errorf("launch: placement %+v, labels %v; want dedicated in partition 2", pl, created.Labels)
	}
}
