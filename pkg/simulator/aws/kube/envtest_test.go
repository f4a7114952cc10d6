package kube

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestSimulatorCreatesNodesInAPIServer launches an instance through the SDK and checks its Node in a real
// kube-apiserver (envtest), then terminates it and checks the Node is gone.
func TestSimulatorCreatesNodesInAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiserver")
	}
	s, err := test.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, Nodes: New(cs), ClusterCA: []byte("CA"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-west-2", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1, HTTPClient: sdk.NewHTTPClient(srv.Client()),
		Credentials: credentials.NewStaticCredentialsProvider("123456789012", "x", "")}
	ctx := context.Background()
	ec2c, ssmc := ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg)
	param, err := ssmc.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec2c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-envtest"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: param.Parameter.Value}}); err != nil {
		t.Fatal(err)
	}
	out, err := ec2c.CreateFleet(ctx, &ec2.CreateFleetInput{Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt-envtest"), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "c5.large", AvailabilityZone: aws.String("us-west-2b")}}}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand}})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("fleet = %+v, %v", out, err)
	}
	id := out.Instances[0].InstanceIds[0]
	desc, err := ec2c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	name := aws.ToString(desc.Reservations[0].Instances[0].PrivateDnsName)

	clk.Step(2 * time.Second)
	sim.Step(ctx)
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", name, err)
	}
	pods := node.Status.Capacity[corev1.ResourcePods]
	if node.Spec.ProviderID != "aws:///us-west-2b/"+id || pods.Value() != 29 || !hasTaint(node, awssim.UninitializedTaintKey) ||
		node.Labels[corev1.LabelTopologyZone] != "us-west-2b" || len(node.Status.Addresses) != 3 {
		t.Errorf("node = %+v", node)
	}
	clk.Step(time.Second)
	sim.Step(ctx)
	node, err = cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	// The API server's TaintNodesByCondition admission adds node.kubernetes.io/not-ready; only ours must go.
	if err != nil || hasTaint(node, awssim.UninitializedTaintKey) {
		t.Errorf("taints after initialization = %v, %v", node.Spec.Taints, err)
	}
	if err := sim.TerminateInstance(id, ""); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second)
	sim.Step(ctx)
	if _, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node after termination: %v", err)
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
