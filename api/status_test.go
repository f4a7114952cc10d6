package api_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestStatusRoundTrip writes statuses built with the condition helpers through the status subresource and
// reads them back: the condition schema (reason pattern, required fields) must accept what the helpers
// produce.
func TestStatusRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "status-round-trip"},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatalf("creating NodeClaim: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), nc) })
	nc.Status.ProviderID = "aws:///us-west-2a/i-0123456789abcdef0"
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")}
	nc.Status.LastPodEventTime = metav1.Now()
	nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
	nc.SetFalse(karpv1.ConditionTypeRegistered, karpv1.ReasonNodeNotFound, "waiting for the node to join")
	nc.SetTrue(karpv1.ConditionTypeDrifted, karpv1.ReasonAMIDrift)
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating NodeClaim status: %v", err)
	}
	var back karpv1.NodeClaim
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), &back); err != nil {
		t.Fatalf("reading NodeClaim: %v", err)
	}
	if r := back.GetCondition(karpv1.ConditionTypeReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != karpv1.ReasonNodeNotFound {
		t.Errorf("Ready read back as %+v, want False/%s", r, karpv1.ReasonNodeNotFound)
	}
	if back.Status.ProviderID != nc.Status.ProviderID {
		t.Errorf("providerID read back as %q", back.Status.ProviderID)
	}

	ec2nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "status-round-trip"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "NodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc"}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0abc"}},
		},
	}
	if err := kube.Create(ctx, ec2nc); err != nil {
		t.Fatalf("creating EC2NodeClass: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), ec2nc) })
	ec2nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-0abc", Zone: "us-west-2a", ZoneID: "usw2-az1"}}
	ec2nc.Status.AMIs = []awsv1.AMI{{ID: "ami-0abc", Name: "al2023", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
	ec2nc.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-0abc", AvailabilityZone: "us-west-2a", InstanceType: "m5.large", OwnerID: "123456789012",
		ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive}}
	for _, c := range ec2nc.ReadinessConditions() {
		ec2nc.SetTrue(c, "Resolved")
	}
	ec2nc.SetFalse(awsv1.ConditionTypeSubnetsReady, awsv1.ReasonSubnetsNotFound, "no subnet matches spec.subnetSelectorTerms")
	if err := kube.Status().Update(ctx, ec2nc); err != nil {
		t.Fatalf("updating EC2NodeClass status: %v", err)
	}
	var backNC awsv1.EC2NodeClass
	if err := kube.Get(ctx, client.ObjectKeyFromObject(ec2nc), &backNC); err != nil {
		t.Fatalf("reading EC2NodeClass: %v", err)
	}
	if backNC.IsTrue(karpv1.ConditionTypeReady) || len(backNC.Status.Subnets) != 1 {
		t.Errorf("status read back as %+v", backNC.Status)
	}
}
