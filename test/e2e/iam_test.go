//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// simPolicy calls awssim's IAM policy admin API (action "" reads the state, "suspend" or "resume").
func simPolicy(ctx context.Context, t *testing.T, action string) (enforced bool) {
	t.Helper()
	method, path := http.MethodGet, "/_awssim/iam-policy"
	if action != "" {
		method, path = http.MethodPost, path+"/"+action
	}
	req, err := http.NewRequestWithContext(ctx, method, env.AWSEndpoint+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Enforced bool }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d, %v", method, path, resp.StatusCode, err)
	}
	return st.Enforced
}

// TestIAMPolicyDeniesAnotherClustersInstance runs only with DOVETAIL_E2E_IAM_POLICY set: an instance of another
// cluster with the same name (created while enforcement is briefly suspended, as that cluster's own controller
// would) cannot be terminated or retagged with this cluster's documented policy.
func TestIAMPolicyDeniesAnotherClustersInstance(t *testing.T) {
	if os.Getenv(framework.IAMPolicyEnv) == "" {
		t.Skipf("%s is not set: the simulator enforces no policy", framework.IAMPolicyEnv)
	}
	ctx := context.Background()
	if !simPolicy(ctx, t, "") {
		t.Fatalf("%s is set but the simulator enforces no policy", framework.IAMPolicyEnv)
	}
	imgs, err := env.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("DescribeImages: %d images, %v", len(imgs.Images), err)
	}
	var image *string
	for _, img := range imgs.Images {
		if img.Architecture == ec2types.ArchitectureValuesX8664 {
			image = img.ImageId
		}
	}
	if image == nil {
		t.Fatalf("no x86_64 image among %d", len(imgs.Images))
	}
	subnets, err := env.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	simPolicy(ctx, t, "suspend")
	// No user data: the instance never gets a Node in this cluster.
	out, err := env.EC2.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		ImageId: image, InstanceType: ec2types.InstanceTypeM5Large, SubnetId: subnets.Subnets[0].SubnetId,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String("kubernetes.io/cluster/dovetail"), Value: aws.String("owned")},
			{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("dovetail")},
			{Key: aws.String("dovetail.sh/cluster-uid"), Value: aws.String("another-cluster-uid")},
		}}}})
	simPolicy(ctx, t, "resume")
	if err != nil {
		t.Fatalf("RunInstances for the other cluster: %v", err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	t.Cleanup(func() {
		simPolicy(ctx, t, "suspend")
		defer simPolicy(ctx, t, "resume")
		if _, err := env.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	for name, call := range map[string]func() error{
		"TerminateInstances": func() error {
			_, err := env.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			return err
		},
		"CreateTags Name": func() error {
			_, err := env.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
				Tags: []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String("mine-now")}}})
			return err
		},
	} {
		if err := call(); sdk.ErrorCode(err) != "UnauthorizedOperation" {
			t.Errorf("%s on another cluster's instance: %v, want UnauthorizedOperation", name, err)
		}
	}
	desc, err := env.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if st := desc.Reservations[0].Instances[0].State.Name; st != ec2types.InstanceStateNameRunning && st != ec2types.InstanceStateNamePending {
		t.Errorf("the other cluster's instance is %s", st)
	}
	fmt.Printf("iam: another cluster's instance %s: TerminateInstances and CreateTags denied\n", id)
}
