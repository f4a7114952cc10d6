package teardown_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/teardown"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
	nodeclaimtermination "github.com/dovetail/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/test"
)

// Each test uses its own API server: teardown acts on every object of the cluster.
func startEnv(t *testing.T) *test.Env {
	t.Helper()
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return test.StartEnv(t, s)
}

const clusterName = "dovetail"

var cluster = tags.Cluster{Name: clusterName, UID: "uid-1"}

// fakeAWS serves the read-only calls teardown makes from the fake cloud provider's live instances plus fixed
// launch templates and instance profiles.
type fakeAWS struct {
	cloud *fake.CloudProvider
	mu    sync.Mutex
	lts   []ec2types.LaunchTemplate
	ips   map[string]map[string]string
}

func (f *fakeAWS) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	live, err := f.cloud.List(ctx)
	if err != nil {
		return nil, err
	}
	var instances []ec2types.Instance
	for i, nc := range live {
		ownerUID := cluster.UID
		if nc.Labels["other-cluster"] == "true" {
			ownerUID = "uid-other"
		}
		instances = append(instances, ec2types.Instance{
			InstanceId: aws.String(fmt.Sprintf("i-%d", i)),
			State:      &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
			Tags: []ec2types.Tag{
				{Key: aws.String(cluster.ClusterTag()), Value: aws.String("owned")},
				{Key: aws.String(tags.ClusterUID), Value: aws.String(ownerUID)},
				{Key: aws.String(awsv1.TagNodeClaim), Value: aws.String(nc.Name)},
			},
		})
	}
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: instances}}}, nil
}

func (f *fakeAWS) DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: f.lts}, nil
}

func (f *fakeAWS) ListInstanceProfiles(context.Context, *iam.ListInstanceProfilesInput, ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []iamtypes.InstanceProfile
	for name := range f.ips {
		out = append(out, iamtypes.InstanceProfile{InstanceProfileName: aws.String(name)})
	}
	return &iam.ListInstanceProfilesOutput{InstanceProfiles: out}, nil
}

func (f *fakeAWS) GetInstanceProfile(_ context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.ips[aws.ToString(in.InstanceProfileName)]
	if !ok {
		return nil, errors.New("NoSuchEntity")
	}
	var tagList []iamtypes.Tag
	for k, v := range t {
		tagList = append(tagList, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return &iam.GetInstanceProfileOutput{InstanceProfile: &iamtypes.InstanceProfile{InstanceProfileName: in.InstanceProfileName, Tags: tagList}}, nil
}

// world creates a NodePool, an EC2NodeClass and n launched NodeClaims with registered Nodes.
func world(t *testing.T, c client.Client, cloud *fake.CloudProvider, n int) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, test.NodePool("default").NodeClass("default").Obj()))
	must(c.Create(ctx, &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
		},
	}))
	for i := 0; i < n; i++ {
		nc := test.TerminationNodeClaim(fmt.Sprintf("default-%d", i), "default", nil)
		must(c.Create(ctx, nc))
		nc.Status.ProviderID = cloud.AddInstance(nc)
		nc.Status.NodeName = fmt.Sprintf("node-%d", i)
		must(c.Status().Update(ctx, nc))
		must(c.Create(ctx, test.TerminationNode(nc.Status.NodeName, nc.Status.ProviderID, "default")))
	}
}

func newTeardown(c client.Client, aws *fakeAWS, out *bytes.Buffer) *teardown.Teardown {
	return &teardown.Teardown{
		Kube: c, EC2: aws, IAM: aws, Cluster: cluster, Clock: clock.RealClock{}, Out: out,
		Timeout: 30 * time.Second, Interval: 100 * time.Millisecond,
	}
}

func count(t *testing.T, c client.Client, list client.ObjectList) int {
	t.Helper()
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return len(mustItems(list))
}

func mustItems(list client.ObjectList) []any {
	switch l := list.(type) {
	case *karpv1.NodePoolList:
		return anySlice(l.Items)
	case *karpv1.NodeClaimList:
		return anySlice(l.Items)
	case *corev1.NodeList:
		return anySlice(l.Items)
	case *awsv1.EC2NodeClassList:
		return anySlice(l.Items)
	}
	return nil
}

func anySlice[T any](in []T) []any {
	out := make([]any, len(in))
	for i := range in {
		out[i] = in[i]
	}
	return out
}

func TestDryRunChangesNothing(t *testing.T) {
	env := startEnv(t)
	cloud := fake.New(clock.RealClock{})
	world(t, env.Client, cloud, 2)
	aws := &fakeAWS{cloud: cloud}
	var out bytes.Buffer
	td := newTeardown(env.Client, aws, &out)
	td.DryRun = true
	if err := td.Run(context.Background()); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"dry run", "default-0, default-1", "node-0, node-1", "tagged AWS resources now: 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	np := &karpv1.NodePool{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: "default"}, np); err != nil || np.DeletionTimestamp != nil || len(np.Spec.Limits) != 0 {
		t.Errorf("dry run changed the NodePool: %v %+v", err, np.Spec.Limits)
	}
	if n := count(t, env.Client, &karpv1.NodeClaimList{}); n != 2 {
		t.Errorf("dry run: %d NodeClaims left, want 2", n)
	}
	if len(cloud.Deleted()) != 0 {
		t.Errorf("dry run terminated instances")
	}
}

// A full teardown with Dovetail's termination controllers running: every NodeClaim, Node, instance,
// NodePool and EC2NodeClass is gone and the command succeeds.
func TestTeardownWithControllersRunning(t *testing.T) {
	env := startEnv(t)
	cloud := fake.New(clock.RealClock{})
	world(t, env.Client, cloud, 3)
	// An instance of a same-named cluster must not count as ours.
	other := test.TerminationNodeClaim("foreign", "default", nil)
	other.Labels["other-cluster"] = "true"
	cloud.AddInstance(other)

	startControllers(t, env, cloud)
	aws := &fakeAWS{cloud: cloud}
	var out bytes.Buffer
	if err := newTeardown(env.Client, aws, &out).Run(context.Background()); err != nil {
		t.Fatalf("teardown: %v\n%s", err, out.String())
	}
	t.Logf("teardown output:\n%s", out.String())
	for list, name := range map[client.ObjectList]string{
		&karpv1.NodePoolList{}: "NodePools", &karpv1.NodeClaimList{}: "NodeClaims", &corev1.NodeList{}: "Nodes", &awsv1.EC2NodeClassList{}: "EC2NodeClasses",
	} {
		if n := count(t, env.Client, list); n != 0 {
			t.Errorf("%d %s left after teardown", n, name)
		}
	}
	if got := len(cloud.Deleted()); got != 3 {
		t.Errorf("%d instances terminated, want 3", got)
	}
	// The controllers run while teardown polls: what its first report still finds depends on timing (Nodes were
	// seen gone already), so only that it reported progress is checked.
	for _, want := range []string{"step 1/5", "step 3/5", "remaining: ", "teardown complete", "another cluster's UID"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Without a controller to remove finalizers, teardown times out, names what is left and fails.
func TestTeardownReportsLeftoversAndFails(t *testing.T) {
	env := startEnv(t)
	cloud := fake.New(clock.RealClock{})
	world(t, env.Client, cloud, 1)
	aws := &fakeAWS{cloud: cloud,
		lts: []ec2types.LaunchTemplate{{LaunchTemplateName: aws.String("dovetail-lt-1"), Tags: []ec2types.Tag{
			{Key: aws.String(cluster.ClusterTag()), Value: aws.String("owned")},
			{Key: aws.String(tags.ClusterUID), Value: aws.String(cluster.UID)},
		}}, {LaunchTemplateName: aws.String("karpenter.k8s.aws/123"), Tags: []ec2types.Tag{
			// Karpenter's: the cluster's name, no UID, no NodeClaim of this cluster named an instance of it.
			{Key: aws.String(cluster.ClusterTag()), Value: aws.String("owned")},
		}}},
		ips: map[string]map[string]string{
			clusterName + "_abc": {cluster.ClusterTag(): "owned", tags.ClusterUID: cluster.UID},
			"unrelated":          {},
		},
	}
	var out bytes.Buffer
	td := newTeardown(env.Client, aws, &out)
	td.Timeout = 2 * time.Minute
	td.Clock = &steppingClock{now: time.Now(), step: 20 * time.Second}
	err := td.Run(context.Background())
	if !errors.Is(err, teardown.ErrIncomplete) {
		t.Fatalf("Run() = %v, want ErrIncomplete\n%s", err, out.String())
	}
	for _, want := range []string{"timed out", "is the Dovetail controller running?", "left: NodeClaim default-0", "left: Node node-0", "launch template dovetail-lt-1",
		"instance profile " + clusterName + "_abc", "instance i-0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(out.String(), "not this cluster's for certain, left alone: launch template karpenter.k8s.aws/123") ||
		strings.Contains(out.String(), "left: launch template karpenter.k8s.aws/123") {
		t.Errorf("a launch template with the cluster's name and no UID is not reported apart from the leftovers:\n%s", out.String())
	}
	if strings.Contains(out.String(), "unrelated") {
		t.Errorf("an instance profile of no cluster was reported:\n%s", out.String())
	}
	// NodePool deleted and NodeClaim deletion requested even though it could not finish.
	np := &karpv1.NodePool{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: "default"}, np); !apierrors.IsNotFound(err) {
		t.Errorf("NodePool not deleted: %v", err)
	}
}

// startControllers runs both termination controllers in a manager until the test ends.
func startControllers(t *testing.T, env *test.Env, cloud *fake.CloudProvider) {
	t.Helper()
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:                 env.Client.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	d := deps.Deps{Client: mgr.GetClient(), KubeClient: cs, CloudProvider: cloud, Clock: clock.RealClock{},
		Recorder: &record.FakeRecorder{}, Metrics: metrics.NewForTest()}
	ctx, cancel := context.WithCancel(context.Background())
	// The termination controllers list a node's pods through the manager's field indexes, as in the operator.
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	if err := nodetermination.NewController(d).Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	if err := nodeclaimtermination.NewController(d).Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// steppingClock moves forward by step each time a wait starts, so a teardown's timeout and stall warnings are
// reached at once without sleeping.
type steppingClock struct {
	clock.RealClock
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *steppingClock) After(time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(c.step)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}
