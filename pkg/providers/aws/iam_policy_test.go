package aws_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/test"
)

// controllerPolicyPath is the documented controller policy (docs/iam.md).
var controllerPolicyPath = filepath.Join("..", "..", "..", "docs", "iam", "controller-policy.json")

func readControllerPolicy(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(controllerPolicyPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestControllerPolicyCoversExactlyTheClientInterfaces compares the policy's actions with the methods of the
// client interfaces the provider is given (the only AWS calls it can make): an action missing from the policy
// fails in production, an extra one is privilege the controller does not need.
func TestControllerPolicyCoversExactlyTheClientInterfaces(t *testing.T) {
	var doc struct {
		Statement []struct {
			Action any
		}
	}
	if err := json.Unmarshal(readControllerPolicy(t), &doc); err != nil {
		t.Fatal(err)
	}
	inPolicy := map[string]bool{}
	for _, st := range doc.Statement {
		switch a := st.Action.(type) {
		case string:
			inPolicy[a] = true
		case []any:
			for _, x := range a {
				inPolicy[x.(string)] = true
			}
		}
	}
	// iam:PassRole is not an API call: AddRoleToInstanceProfile needs it for the node role.
	called := map[string]bool{"iam:PassRole": true}
	for prefix, iface := range map[string]reflect.Type{
		"ec2":             reflect.TypeFor[sdk.EC2API](),
		"ssm":             reflect.TypeFor[sdk.SSMAPI](),
		"iam":             reflect.TypeFor[sdk.IAMAPI](),
		"pricing":         reflect.TypeFor[sdk.PricingAPI](),
		"eks":             reflect.TypeFor[sdk.EKSAPI](),
		"sqs":             reflect.TypeFor[sdk.SQSAPI](),
		"arc-zonal-shift": reflect.TypeFor[sdk.ARCZonalShiftAPI](),
	} {
		for i := range iface.NumMethod() {
			called[prefix+":"+iface.Method(i).Name] = true
		}
	}
	if d := cmp.Diff(sortedKeys(called), sortedKeys(inPolicy)); d != "" {
		t.Errorf("policy actions differ from the provider's client interfaces (-called +policy):\n%s", d)
	}
	for a := range inPolicy {
		if strings.Contains(a, "*") {
			t.Errorf("policy action %q is a wildcard; list the calls", a)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestControllerPolicyAllowsOwnAndDeniesOtherClusters runs the provider against a simulator enforcing the
// documented policy: this cluster's launch, list, tag, terminate and cleanup work; another cluster's
// instance and launch template (same name, another UID) cannot be terminated, retagged or deleted.
func TestControllerPolicyAllowsOwnAndDeniesOtherClusters(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	// Cluster b (same name) launches before the policy is enforced, as its own controller would.
	b := w.provider(t, "uid-b")
	b.resolvedNodeClass(t)
	cb, err := b.Create(ctx, claim("b-1", "m5.large"))
	if err != nil {
		t.Fatalf("Create(b): %v", err)
	}
	idB, _ := instance.ParseProviderID(cb.Status.ProviderID)

	if err := w.sim.SetIAMPolicy(readControllerPolicy(t), map[string]string{
		"CLUSTER_UID": "uid-a", "NODE_ROLE_NAME": "KarpenterNodeRole-dovetail",
	}); err != nil {
		t.Fatal(err)
	}
	a := w.provider(t, "uid-a")
	nca := a.resolvedNodeClass(t)
	if _, err := a.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj()); err != nil {
		t.Fatalf("GetInstanceTypes under the policy: %v", err)
	}
	ca, err := a.Create(ctx, claim("a-1", "m5.large"))
	if err != nil {
		t.Fatalf("Create under the policy: %v", err)
	}
	idA, _ := instance.ParseProviderID(ca.Status.ProviderID)
	list, err := a.List(ctx)
	if err != nil || len(list) != 1 || list[0].Status.ProviderID != ca.Status.ProviderID {
		t.Errorf("List under the policy = %d claims, %v; want a's one instance", len(list), err)
	}
	if err := a.TagInstance(ctx, idA, map[string]string{"Name": "ip-10-0-0-1.us-west-2.compute.internal"}); err != nil {
		t.Errorf("TagInstance under the policy: %v", err)
	}
	sqsClient := sqs.NewFromConfig(w.sdkConfig("AKIDACCOUNTA"))
	q, err := sqsClient.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: awssdk.String("dovetail")})
	if err != nil {
		t.Errorf("GetQueueUrl under the policy: %v", err)
	} else if _, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 0}); err != nil {
		t.Errorf("ReceiveMessage under the policy: %v", err)
	}

	// Another cluster's resources: denied by the policy even when called directly.
	ltsB, err := a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:dovetail.sh/cluster-uid"), Values: []string{"uid-b"}}}})
	if err != nil || len(ltsB.LaunchTemplates) == 0 {
		t.Fatalf("DescribeLaunchTemplates(b): %v", err)
	}
	denied := map[string]func() error{
		"terminate b's instance": func() error {
			_, err := a.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{idB}})
			return err
		},
		"retag b's instance": func() error {
			_, err := a.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{idB},
				Tags: []ec2types.Tag{{Key: awssdk.String("Name"), Value: awssdk.String("x")}}})
			return err
		},
		"delete b's launch template": func() error {
			_, err := a.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: ltsB.LaunchTemplates[0].LaunchTemplateId})
			return err
		},
		"change the cluster UID tag of a's own instance": func() error {
			_, err := a.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{idA},
				Tags: []ec2types.Tag{{Key: awssdk.String("dovetail.sh/cluster-uid"), Value: awssdk.String("uid-b")}}})
			return err
		},
	}
	for name, call := range denied {
		if err := call(); sdk.ErrorCode(err) != "UnauthorizedOperation" {
			t.Errorf("%s: error %v, want UnauthorizedOperation", name, err)
		}
	}
	// Cluster b's own controller, under cluster a's policy, can launch nothing.
	if _, err := b.Create(ctx, claim("b-2", "m5.large")); err == nil {
		t.Errorf("cluster b launched under cluster a's policy")
	}
	if st := describe(t, a, idB).State.Name; st != ec2types.InstanceStateNameRunning && st != ec2types.InstanceStateNamePending {
		t.Errorf("b's instance is %s", st)
	}

	if err := a.Delete(ctx, ca); err != nil {
		t.Errorf("Delete under the policy: %v", err)
	}
	if err := a.Delete(ctx, cb); !cloudprovider.IsNotFound(err) {
		t.Errorf("a.Delete(b's instance) = %v, want NotFound", err)
	}
	if err := a.DeleteNodeClassResources(ctx, nca); err != nil {
		t.Errorf("DeleteNodeClassResources under the policy: %v", err)
	}
	ltsA, err := a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ltsA.LaunchTemplates, func(lt ec2types.LaunchTemplate) bool {
		return slices.ContainsFunc(lt.Tags, func(tg ec2types.Tag) bool {
			return awssdk.ToString(tg.Key) == "dovetail.sh/cluster-uid" && awssdk.ToString(tg.Value) == "uid-a"
		})
	}) {
		t.Errorf("cluster a's launch templates survived DeleteNodeClassResources")
	}
}
