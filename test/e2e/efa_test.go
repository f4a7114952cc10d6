//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestEFAPodInPlacementGroup: a pod requesting vpc.amazonaws.com/efa, with an EC2NodeClass selecting a cluster
// placement group by name, gets a node of the EFA type its NodePool allows (not the cheaper type without EFA),
// whose instance is in the group with EFA interfaces, and whose NodeClaim and Node carry the group's id.
func TestEFAPodInPlacementGroup(t *testing.T) {
	const pool, group = "efa", "dovetail-e2e-efa"
	ctx := context.Background()
	pgID := ensurePlacementGroup(t, group)
	opts := framework.PoolOptions{InstanceTypes: []string{"m5.large", "c5n.18xlarge"}, CapacityTypes: []string{"on-demand"}}
	setupPool(t, pool, opts)
	objs, err := framework.NodePool(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "EC2NodeClass" {
			if err := unstructured.SetNestedField(o.Object, map[string]any{"name": group}, "spec", "placementGroupSelector"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	d := framework.Deployment(pool, "efa", pool, 1, "100m", "128Mi")
	one := resource.MustParse("1")
	d.Spec.Template.Spec.Containers[0].Resources.Requests["vpc.amazonaws.com/efa"] = one
	d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"vpc.amazonaws.com/efa": one}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "efa"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	if got := claim.Labels[corev1.LabelInstanceTypeStable]; got != "c5n.18xlarge" {
		t.Errorf("NodeClaim %s is %s, want c5n.18xlarge (the allowed type with EFA)", claim.Name, got)
	}
	if got := claim.Labels[awsv1.LabelPlacementGroupID]; got != pgID {
		t.Errorf("NodeClaim %s label %s = %q, want %s", claim.Name, awsv1.LabelPlacementGroupID, got, pgID)
	}
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[awsv1.LabelPlacementGroupID]; got != pgID {
		t.Errorf("Node %s label %s = %q, want %s", node.Name, awsv1.LabelPlacementGroupID, got, pgID)
	}
	out, err := env.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{framework.InstanceID(claim.Status.ProviderID)}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances: %v", err)
	}
	inst := out.Reservations[0].Instances[0]
	if inst.Placement == nil || aws.ToString(inst.Placement.GroupId) != pgID || aws.ToString(inst.Placement.GroupName) != group {
		t.Errorf("instance placement %+v, want group %s (%s)", inst.Placement, group, pgID)
	}
	var types []string
	for _, ni := range inst.NetworkInterfaces {
		types = append(types, aws.ToString(ni.InterfaceType))
	}
	if !slices.Contains(types, "efa") {
		t.Errorf("instance interfaces %v have no EFA", types)
	}
}

// ensurePlacementGroup creates the cluster placement group (or finds it from an earlier run) and returns its id.
func ensurePlacementGroup(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := env.EC2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String(name), Strategy: ec2types.PlacementStrategyCluster}); err != nil {
		t.Logf("CreatePlacementGroup %s: %v (looking it up)", name, err)
	}
	out, err := env.EC2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{name}})
	if err != nil || len(out.PlacementGroups) != 1 {
		t.Fatalf("DescribePlacementGroups %s: %v", name, err)
	}
	return aws.ToString(out.PlacementGroups[0].GroupId)
}
