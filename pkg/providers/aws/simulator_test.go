package aws_test

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
	"github.com/dovetail/dovetail/pkg/settings"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

// world is one simulator behind an httptest server, shared by the providers of a test.
type world struct {
	sim   *awssim.Simulator
	srv   *httptest.Server
	clock *clocktesting.FakeClock
}

func newWorld(t testing.TB) *world {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, ClusterCA: []byte("CA"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("awssim.New: %v", err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return &world{sim: sim, srv: srv, clock: clk}
}

// sdkConfig is the configuration a real deployment would load from AWS_ENDPOINT_URL and static credentials.
func (w *world) sdkConfig(account string) awssdk.Config {
	return awssdk.Config{
		Region:           "us-west-2",
		Credentials:      credentials.NewStaticCredentialsProvider(account, "secret", ""),
		BaseEndpoint:     awssdk.String(w.srv.URL),
		RetryMaxAttempts: 1,
		// The server's own transport (closed with it) behind the provider's body-detaching client.
		HTTPClient: sdk.NewHTTPClient(w.srv.Client()),
	}
}

// provider is one cluster's cloud provider plus the objects it reads.
type provider struct {
	*aws.CloudProvider
	kube client.Client
	ec2  *ec2.Client
}

func (w *world) provider(t testing.TB, clusterUID string, objs ...client.Object) *provider {
	t.Helper()
	return w.providerWith(t, clusterUID, nil, objs...)
}

// providerWith is provider with the options changed by mod (nil: unchanged).
func (w *world) providerWith(t testing.TB, clusterUID string, mod func(*aws.Options), objs ...client.Object) *provider {
	t.Helper()
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&awsv1.EC2NodeClass{}).Build()
	cfg := w.sdkConfig("AKIDACCOUNTA")
	opts := aws.Options{
		// Endpoint, CA, Kubernetes version and service CIDR come from EKS DescribeCluster.
		Settings:   &settings.Settings{ClusterName: "dovetail", VMMemoryOverheadPercent: 0.075},
		ClusterUID: clusterUID, KubeClient: kube, Clock: w.clock, AWSConfig: &cfg,
	}
	if mod != nil {
		mod(&opts)
	}
	cp, err := aws.NewCloudProvider(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewCloudProvider: %v", err)
	}
	return &provider{CloudProvider: cp, kube: kube, ec2: ec2.NewFromConfig(cfg)}
}

// resolvedNodeClass resolves the default node class through the provider, as the status controller does.
func (p *provider) resolvedNodeClass(t testing.TB) *awsv1.EC2NodeClass {
	t.Helper()
	return p.resolve(t, test.EC2NodeClass("default", "dovetail").Tag("team", "platform").Obj())
}

// resolve fills the node class's status through the provider and stores it.
func (p *provider) resolve(t testing.TB, nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	var err error
	if nc.Status.Subnets, err = p.ResolveSubnets(ctx, nc); err != nil {
		t.Fatalf("ResolveSubnets: %v", err)
	}
	if nc.Status.SecurityGroups, err = p.ResolveSecurityGroups(ctx, nc); err != nil {
		t.Fatalf("ResolveSecurityGroups: %v", err)
	}
	if nc.Status.AMIs, err = p.ResolveAMIs(ctx, nc); err != nil {
		t.Fatalf("ResolveAMIs: %v", err)
	}
	if nc.Status.InstanceProfile, err = p.ResolveInstanceProfile(ctx, nc); err != nil {
		t.Fatalf("ResolveInstanceProfile: %v", err)
	}
	if err := p.kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func TestResolveNodeClassAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	ctx := context.Background()
	nc := p.resolvedNodeClass(t)

	var zones []string
	for _, s := range nc.Status.Subnets {
		if !strings.HasPrefix(s.ID, "subnet-") || !strings.HasPrefix(s.ZoneID, "usw2-az") {
			t.Errorf("subnet %+v lacks an id or zone id", s)
		}
		zones = append(zones, s.Zone)
	}
	if d := cmp.Diff([]string{"us-west-2a", "us-west-2b", "us-west-2c"}, slices.Compact(zones)); d != "" {
		t.Errorf("subnet zones (-want +got):\n%s", d)
	}
	if len(nc.Status.SecurityGroups) == 0 {
		t.Errorf("no security groups resolved")
	}
	arches := map[string]bool{}
	for _, a := range nc.Status.AMIs {
		for _, r := range a.Requirements {
			if r.Key == corev1.LabelArchStable {
				arches[r.Values[0]] = true
			}
		}
	}
	if !arches["amd64"] || !arches["arm64"] {
		t.Errorf("AMIs %+v do not cover amd64 and arm64", nc.Status.AMIs)
	}

	missing := test.EC2NodeClass("missing", "nowhere").Obj()
	_, err := p.ResolveSubnets(ctx, missing)
	if want := "no subnets matched subnetSelectorTerms [tags karpenter.sh/discovery=nowhere]"; err == nil || err.Error() != want {
		t.Errorf("ResolveSubnets(nowhere) error = %v, want %q", err, want)
	}
	old := test.EC2NodeClass("old", "dovetail").Alias("al2023@v19990101").Obj()
	if _, err := p.ResolveAMIs(ctx, old); err == nil || !strings.Contains(err.Error(), "no AMIs matched amiSelectorTerms [alias al2023@v19990101] for Kubernetes 1.34") {
		t.Errorf("ResolveAMIs(unknown version) error = %v", err)
	}
}

func TestInstanceTypesFromSimulatorCatalog(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	its, err := p.GetInstanceTypes(context.Background(), test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	if len(its) < 300 {
		t.Fatalf("got %d instance types, want the simulator's catalog (hundreds)", len(its))
	}
	var m5 *cloudprovider.InstanceType
	for _, it := range its {
		if it.Name == "m5.large" {
			m5 = it
		}
	}
	if m5 == nil {
		t.Fatalf("m5.large missing")
	}
	got := map[string]string{}
	for k, v := range m5.Capacity {
		got[string(k)] = v.String()
	}
	if d := cmp.Diff(map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi", "vpc.amazonaws.com/pod-eni": "9"}, got); d != "" {
		t.Errorf("m5.large capacity (-want +got):\n%s", d)
	}
	if m5.Labels[awsv1.LabelInstanceFamily] != "m5" || m5.Labels[corev1.LabelArchStable] != "amd64" {
		t.Errorf("m5.large labels = %v", m5.Labels)
	}
	zones := map[string]bool{}
	for _, o := range m5.Offerings {
		if o.CapacityType == cloudprovider.CapacityTypeSpot && o.Available && o.Price > 0 {
			zones[o.Zone] = true
		}
	}
	if len(zones) != 3 {
		t.Errorf("m5.large spot offerings in %v, want three zones", zones)
	}
}

func claim(name string, types ...string) *karpv1.NodeClaim {
	return test.NodeClaim(name, "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand").
		Label("team", "a").
		Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).
		Obj()
}

func describe(t *testing.T, p *provider, id string) ec2types.Instance {
	t.Helper()
	out, err := p.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		t.Fatalf("DescribeInstances(%s): %v", id, err)
	}
	return out.Reservations[0].Instances[0]
}

func TestCreateTagsUserDataGetAndDelete(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	ctx := context.Background()
	created, err := p.Create(ctx, claim("default-abcde", "m5.large", "c5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id, err := instance.ParseProviderID(created.Status.ProviderID)
	if err != nil || !strings.HasPrefix(created.Status.ProviderID, "aws:///us-west-2") {
		t.Fatalf("providerID %q: %v", created.Status.ProviderID, err)
	}
	for _, k := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, corev1.LabelArchStable, awsv1.LabelTopologyZoneID} {
		if created.Labels[k] == "" {
			t.Errorf("created NodeClaim lacks label %s: %v", k, created.Labels)
		}
	}
	if created.Status.ImageID == "" || created.Status.Capacity.Cpu().IsZero() || created.Status.Allocatable.Memory().IsZero() {
		t.Errorf("status lacks image, capacity or allocatable: %+v", created.Status)
	}

	inst := describe(t, p, id)
	tags := map[string]string{}
	for _, tg := range inst.Tags {
		tags[awssdk.ToString(tg.Key)] = awssdk.ToString(tg.Value)
	}
	want := map[string]string{
		"karpenter.sh/nodepool":          "default",
		"karpenter.sh/nodeclaim":         "default-abcde",
		"karpenter.k8s.aws/ec2nodeclass": "default",
		"kubernetes.io/cluster/dovetail": "owned",
		"eks:eks-cluster-name":           "dovetail",
		"dovetail.sh/cluster-uid":        "uid-a",
		"Name":                           "default-abcde",
		"team":                           "platform",
	}
	for k, v := range want {
		if tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q", k, tags[k], v)
		}
	}
	if awssdk.ToString(inst.ImageId) != created.Status.ImageID {
		t.Errorf("instance image %s, NodeClaim says %s", awssdk.ToString(inst.ImageId), created.Status.ImageID)
	}

	// The launch template's user data carries the NodeClaim's labels and taints in the bootstrap contract.
	checkUserData(t, p, awssdk.ToString(inst.ImageId))

	got, err := p.Get(ctx, created.Status.ProviderID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Name != "default-abcde" || got.Labels[karpv1.NodePoolLabelKey] != "default" || got.Labels[corev1.LabelInstanceTypeStable] != created.Labels[corev1.LabelInstanceTypeStable] {
		t.Errorf("Get = %+v", got.ObjectMeta)
	}
	// A second Create for the same NodeClaim (its first launch was not recorded) adopts the instance.
	again, err := p.Create(ctx, claim("default-abcde", "m5.large", "c5.large"))
	if err != nil || again.Status.ProviderID != created.Status.ProviderID || again.Status.ImageID != created.Status.ImageID {
		t.Errorf("second Create = %v, %v; want the same instance %s", again, err, created.Status.ProviderID)
	}
	if reason, err := p.IsDrifted(ctx, created); err != nil || reason != "" {
		t.Errorf("IsDrifted right after launch = %q, %v; want not drifted", reason, err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.AMIs = []awsv1.AMI{{ID: "ami-newer"}}
	if err := p.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if reason, err := p.IsDrifted(ctx, created); err != nil || reason != karpv1.ReasonAMIDrift {
		t.Errorf("IsDrifted after an AMI change = %q, %v; want %s", reason, err, karpv1.ReasonAMIDrift)
	}
	nc.Spec.Tags["team"] = "other"
	if err := p.kube.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if reason, err := p.IsDrifted(ctx, created); err != nil || reason != karpv1.ReasonNodeClassDrift {
		t.Errorf("IsDrifted after a tags change = %q, %v; want %s", reason, err, karpv1.ReasonNodeClassDrift)
	}
	if err := p.TagInstance(ctx, id, map[string]string{"Name": "ip-10-0-0-1.us-west-2.compute.internal"}); err != nil {
		t.Fatalf("TagInstance: %v", err)
	}
	if err := p.Delete(ctx, created); err != nil {
		t.Fatalf("first Delete: %v", err)
	}
	if err := p.Delete(ctx, created); !cloudprovider.IsNotFound(err) {
		t.Fatalf("second Delete = %v, want NotFound once the instance is shutting down", err)
	}
}

func TestInsufficientCapacityMarksOfferingAndRetriesElsewhere(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	ctx := context.Background()
	w.sim.AddCapacityFault(awssim.CapacityFault{InstanceType: "c5.large", CapacityType: "spot"})

	// c5.large is cheaper than m5.large: the first launch may pick it, hit ICE everywhere and fail over.
	var launched string
	for attempt := 0; attempt < 3 && launched == ""; attempt++ {
		created, err := p.Create(ctx, claim("default-ice", "c5.large", "m5.large"))
		switch {
		case err == nil:
			launched = created.Labels[corev1.LabelInstanceTypeStable]
		case cloudprovider.IsInsufficientCapacity(err):
			continue
		default:
			t.Fatalf("Create: %v", err)
		}
	}
	if launched != "m5.large" {
		t.Fatalf("launched %q, want m5.large after c5.large spot was refused", launched)
	}
	if !offeringUnavailable(t, p, "c5.large", "spot") {
		t.Errorf("c5.large spot offerings still available after ICE")
	}
	// Only c5.large spot allowed: every offering is refused, so Create reports insufficient capacity.
	spotOnly := test.NodeClaim("default-ice2", "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot").Obj()
	if _, err := p.Create(ctx, spotOnly); !cloudprovider.IsInsufficientCapacity(err) {
		t.Errorf("Create(c5.large spot only) = %v, want InsufficientCapacityError", err)
	}
	// With on-demand allowed the same type launches on-demand.
	created, err := p.Create(ctx, claim("default-ice3", "c5.large"))
	if err != nil || created.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" {
		t.Errorf("Create(c5.large spot or on-demand) = %v, %v; want an on-demand launch", err, created)
	}
	w.clock.Step(unavailable.DefaultTTL)
	if offeringUnavailable(t, p, "c5.large", "spot") {
		t.Errorf("c5.large spot offerings still unavailable after the TTL")
	}
}

func offeringUnavailable(t *testing.T, p *provider, name, ct string) bool {
	t.Helper()
	its, err := p.GetInstanceTypes(context.Background(), test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == ct && o.Available {
				return false
			}
		}
		return true
	}
	t.Fatalf("instance type %s missing", name)
	return false
}

func TestListAndDeleteRespectClusterIdentity(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	b := w.provider(t, "uid-b") // same cluster name, another cluster
	a.resolvedNodeClass(t)
	b.resolvedNodeClass(t)
	ctx := context.Background()
	ca, err := a.Create(ctx, claim("a-1", "m5.large"))
	if err != nil {
		t.Fatalf("Create(a): %v", err)
	}
	cb, err := b.Create(ctx, claim("b-1", "m5.large"))
	if err != nil {
		t.Fatalf("Create(b): %v", err)
	}
	// An instance with the cluster name tag but no identity (made by hand or an older controller).
	lts, err := a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(lts.LaunchTemplates) == 0 {
		t.Fatalf("DescribeLaunchTemplates: %v", err)
	}
	fleet, err := a.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lts.LaunchTemplates[0].LaunchTemplateId, Version: awssdk.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceTypeM5Large, SubnetId: awssdk.String(subnetOf(t, a, ca))}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: awssdk.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: awssdk.String("kubernetes.io/cluster/dovetail"), Value: awssdk.String("owned")},
			{Key: awssdk.String("karpenter.sh/nodepool"), Value: awssdk.String("default")},
		}}},
	})
	if err != nil || len(fleet.Instances) == 0 {
		t.Fatalf("CreateFleet without identity: %v %+v", err, fleet)
	}
	manual := fleet.Instances[0].InstanceIds[0]

	listA, err := a.List(ctx)
	if err != nil {
		t.Fatalf("List(a): %v", err)
	}
	var ids []string
	for _, c := range listA {
		ids = append(ids, c.Status.ProviderID)
	}
	if d := cmp.Diff([]string{ca.Status.ProviderID}, ids); d != "" {
		t.Errorf("cluster a lists (-want +got):\n%s", d)
	}
	if err := a.Delete(ctx, cb); !cloudprovider.IsNotFound(err) {
		t.Errorf("a.Delete(b's instance) = %v, want NotFound", err)
	}
	idB, _ := instance.ParseProviderID(cb.Status.ProviderID)
	if st := describe(t, b, idB).State.Name; st == ec2types.InstanceStateNameShuttingDown || st == ec2types.InstanceStateNameTerminated {
		t.Errorf("b's instance is %s after a tried to delete it", st)
	}
	if _, err := a.Get(ctx, "aws:///us-west-2a/"+manual); !cloudprovider.IsNotFound(err) {
		t.Errorf("a.Get(untagged-identity instance) = %v, want NotFound", err)
	}
	if st := describe(t, a, manual).State.Name; st == ec2types.InstanceStateNameShuttingDown || st == ec2types.InstanceStateNameTerminated {
		t.Errorf("manual instance is %s", st)
	}
}

// checkUserData finds the node class's launch template for the image and checks its bootstrap: the NodeClaim's
// labels and taints, the unregistered taint and the kubelet's max pods, as the simulator will read them.
func checkUserData(t *testing.T, p *provider, imageID string) {
	t.Helper()
	ctx := context.Background()
	lts, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:karpenter.k8s.aws/ec2nodeclass"), Values: []string{"default"}},
	}})
	if err != nil || len(lts.LaunchTemplates) == 0 {
		t.Fatalf("DescribeLaunchTemplates: %d templates, %v", len(lts.LaunchTemplates), err)
	}
	for _, lt := range lts.LaunchTemplates {
		v, err := p.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: lt.LaunchTemplateId, Versions: []string{"$Latest"},
		})
		if err != nil || len(v.LaunchTemplateVersions) == 0 {
			t.Fatalf("DescribeLaunchTemplateVersions(%s): %v", awssdk.ToString(lt.LaunchTemplateName), err)
		}
		data := v.LaunchTemplateVersions[0].LaunchTemplateData
		if awssdk.ToString(data.ImageId) != imageID {
			continue
		}
		b, err := awssim.ParseUserData(awssdk.ToString(data.UserData))
		if err != nil {
			t.Fatalf("simulator cannot parse the user data: %v", err)
		}
		for k, want := range map[string]string{"karpenter.sh/nodepool": "default", "team": "a", "karpenter.sh/capacity-type": "spot"} {
			if b.Labels[k] != want {
				t.Errorf("bootstrap label %s = %q, want %q (labels %v)", k, b.Labels[k], want, b.Labels)
			}
		}
		var taints []string
		for _, tn := range b.Taints {
			taints = append(taints, tn.ToString())
		}
		slices.Sort(taints)
		if d := cmp.Diff([]string{"dedicated=gpu:NoSchedule", "karpenter.sh/unregistered:NoExecute"}, taints); d != "" {
			t.Errorf("bootstrap taints (-want +got):\n%s", d)
		}
		if b.MaxPods == nil || *b.MaxPods != 29 {
			t.Errorf("bootstrap maxPods = %v, want 29", b.MaxPods)
		}
		if b.ClusterName != "dovetail" {
			t.Errorf("bootstrap cluster name = %q", b.ClusterName)
		}
		return
	}
	t.Errorf("no launch template of the node class uses image %s", imageID)
}

func subnetOf(t *testing.T, p *provider, c *karpv1.NodeClaim) string {
	t.Helper()
	id, err := instance.ParseProviderID(c.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return awssdk.ToString(describe(t, p, id).SubnetId)
}

func TestNodeClassCleanupDeletesOnlyOwnResources(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	b := w.provider(t, "uid-b")
	nca := a.resolvedNodeClass(t)
	b.resolvedNodeClass(t)
	ctx := context.Background()
	if nca.Status.InstanceProfile == "" {
		t.Fatalf("no instance profile resolved")
	}
	for _, p := range []*provider{a, b} {
		if _, err := p.Create(ctx, claim("c", "m5.large")); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	count := func(uid string) int {
		out, err := a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
			{Name: awssdk.String("tag:dovetail.sh/cluster-uid"), Values: []string{uid}},
		}})
		if err != nil {
			t.Fatalf("DescribeLaunchTemplates: %v", err)
		}
		return len(out.LaunchTemplates)
	}
	if count("uid-a") == 0 || count("uid-b") == 0 {
		t.Fatalf("launch templates a=%d b=%d, want both clusters to have some", count("uid-a"), count("uid-b"))
	}
	if err := a.DeleteNodeClassResources(ctx, nca); err != nil {
		t.Fatalf("DeleteNodeClassResources: %v", err)
	}
	if n := count("uid-a"); n != 0 {
		t.Errorf("%d launch templates of cluster a left", n)
	}
	if count("uid-b") == 0 {
		t.Errorf("cluster b's launch templates were deleted by cluster a")
	}
	cfg := w.sdkConfig("AKIDACCOUNTA")
	_, err := iam.NewFromConfig(cfg).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(nca.Status.InstanceProfile)})
	if sdk.ErrorCode(err) != "NoSuchEntity" {
		t.Errorf("GetInstanceProfile after cleanup = %v, want NoSuchEntity", err)
	}
	// Deleting again is a no-op.
	if err := a.DeleteNodeClassResources(ctx, nca); err != nil {
		t.Errorf("second DeleteNodeClassResources: %v", err)
	}
}

// BenchmarkGetInstanceTypes measures a warm GetInstanceTypes call (descriptions and prices cached), which the
// scheduler makes for every NodePool on every provisioning pass.
func BenchmarkGetInstanceTypes(b *testing.B) {
	w := newWorld(b)
	p := w.provider(b, "uid-a")
	p.resolvedNodeClass(b)
	np := test.NodePool("default").NodeClass("default").Obj()
	ctx := context.Background()
	if _, err := p.GetInstanceTypes(ctx, np); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.GetInstanceTypes(ctx, np); err != nil {
			b.Fatal(err)
		}
	}
}

func TestThrottlingSurfacesAsThrottledError(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	w.sim.SetFaults(awssim.Faults{Throttle: awssim.ThrottleFault{Rate: 1, Actions: []string{"CreateFleet"}}})
	_, err := p.Create(context.Background(), claim("default-throttled", "m5.large"))
	if !cloudprovider.IsThrottled(err) {
		t.Fatalf("Create under CreateFleet throttling = %v, want ThrottledError", err)
	}
	w.sim.ClearFaults()
	if _, err := p.Create(context.Background(), claim("default-throttled", "m5.large")); err != nil {
		t.Fatalf("Create after throttling stopped: %v", err)
	}
}

func TestJustLaunchedInstanceIsNotReportedGone(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	ctx := context.Background()
	w.sim.SetFaults(awssim.Faults{NotFoundAfterLaunch: awssim.Duration(5 * time.Second)})
	created, err := p.Create(ctx, claim("default-young", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	_, err = p.Get(ctx, created.Status.ProviderID)
	if err == nil || cloudprovider.IsNotFound(err) {
		t.Fatalf("Get right after launch = %v, want a retryable error, not NotFound", err)
	}
	w.clock.Step(6 * time.Second)
	if _, err := p.Get(ctx, created.Status.ProviderID); err != nil {
		t.Fatalf("Get once visible: %v", err)
	}
}

func TestBottlerocketBootstrapAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolve(t, test.EC2NodeClass("default", "dovetail").Alias("bottlerocket@latest").
		UserData("[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n").Obj())
	created, err := p.Create(context.Background(), claim("default-br", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	checkUserData(t, p, created.Status.ImageID)
	if eph := created.Status.Capacity[corev1.ResourceEphemeralStorage]; eph.String() != "20Gi" {
		t.Errorf("ephemeral-storage = %s, want the 20Gi Bottlerocket data volume", eph.String())
	}
}

// deleteRecorder records the Delete calls garbage collection makes.
type deleteRecorder struct {
	cloudprovider.CloudProvider
	deleted []string
}

// Unwrap lets controllers find the optional interfaces of the provider it records for (adoption).
func (r *deleteRecorder) Unwrap() cloudprovider.CloudProvider { return r.CloudProvider }

func (r *deleteRecorder) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	r.deleted = append(r.deleted, nc.Status.ProviderID)
	return r.CloudProvider.Delete(ctx, nc)
}

// After an ordinary scale-in (the NodeClaim gone, its instance shutting-down, then terminated), garbage collection
// does nothing; an instance without a NodeClaim that is still running is collected.
func TestGarbageCollectionAfterScaleInAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"kept", "scaled-in", "leaked"} {
		c, err := p.Create(ctx, claim(name, "m5.large"))
		if err != nil {
			t.Fatalf("Create(%s): %v", name, err)
		}
		ids = append(ids, c.Status.ProviderID)
	}
	kept, scaledIn, leaked := ids[0], ids[1], ids[2]
	// The termination controller terminated scaled-in's instance and removed its NodeClaim.
	if err := p.Delete(ctx, test.NodeClaim("scaled-in", "default").ProviderID(scaledIn).Obj()); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(test.NodeClaim("kept", "default").ProviderID(kept).Obj()).Build()
	rec := &deleteRecorder{CloudProvider: p.CloudProvider}
	gc := garbagecollection.NewController(deps.Deps{Client: kube, CloudProvider: rec, Clock: w.clock,
		Recorder: record.NewFakeRecorder(10), Metrics: metrics.NewForTest()})

	w.clock.Step(garbagecollection.LeakGracePeriod + time.Second)
	idScaledIn, _ := instance.ParseProviderID(scaledIn)
	if st := describe(t, p, idScaledIn).State.Name; st != ec2types.InstanceStateNameShuttingDown {
		t.Fatalf("scaled-in instance is %s, want shutting-down", st)
	}
	if err := gc.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if d := cmp.Diff([]string{leaked}, rec.deleted); d != "" {
		t.Errorf("instances garbage collection terminated while one was shutting down (-want +got):\n%s", d)
	}
	// Both terminations complete; nothing is left to collect.
	w.sim.Step(ctx)
	rec.deleted = nil
	if err := gc.Reconcile(ctx); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	if len(rec.deleted) != 0 {
		t.Errorf("garbage collection terminated %v after the terminations completed", rec.deleted)
	}
}

type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

// Throttled attempts are counted per service and operation, retries included, and the error the caller sees is
// a ThrottledError.
func TestThrottledCallsAreCountedAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).Build()
	cfg := w.sdkConfig("AKIDACCOUNTA")
	cfg.RetryMaxAttempts = 0
	cfg.Retryer = func() awssdk.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.Backoff, o.RateLimiter = 3, noBackoff{}, ratelimit.None
		})
	}
	counts := map[string]int{}
	cp, err := aws.NewCloudProvider(context.Background(), aws.Options{
		Settings:   &settings.Settings{ClusterName: "dovetail", VMMemoryOverheadPercent: 0.075},
		ClusterUID: "uid-a", KubeClient: kube, Clock: w.clock, AWSConfig: &cfg,
		OnThrottle: func(service, operation string) { counts[service+"/"+operation]++ },
	})
	if err != nil {
		t.Fatalf("NewCloudProvider: %v", err)
	}
	w.sim.SetFaults(awssim.Faults{Throttle: awssim.ThrottleFault{Rate: 1, Actions: []string{"DescribeInstances"}}})
	_, err = cp.List(context.Background())
	if !cloudprovider.IsThrottled(err) {
		t.Fatalf("List under throttling = %v, want a ThrottledError", err)
	}
	if d := cmp.Diff(map[string]int{"EC2/DescribeInstances": 3}, counts); d != "" {
		t.Errorf("throttled attempts (-want +got):\n%s", d)
	}
	w.sim.ClearFaults()
	if _, err := cp.List(context.Background()); err != nil {
		t.Fatalf("List after the fault cleared: %v", err)
	}
	if counts["EC2/DescribeInstances"] != 3 {
		t.Errorf("a successful call was counted as throttled: %v", counts)
	}
}

// TestWindows2025AgainstSimulator launches a node with the windows2025 alias: the simulator answers the SSM
// parameter, the instance type carries the Windows labels and the user data is the EKS Windows bootstrap.
func TestWindows2025AgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolve(t, test.EC2NodeClass("default", "dovetail").Alias("windows2025@latest").Obj())
	created, err := p.Create(context.Background(), claim("default-win", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for k, want := range map[string]string{corev1.LabelOSStable: "windows", corev1.LabelWindowsBuild: awsv1.WindowsBuild2025} {
		if got := created.Labels[k]; got != want {
			t.Errorf("NodeClaim label %s = %q, want %q", k, got, want)
		}
	}
	if created.Status.ImageID == "" {
		t.Fatalf("no image id on the created NodeClaim")
	}
	checkUserData(t, p, created.Status.ImageID)
	img, err := p.ec2.DescribeImages(context.Background(), &ec2.DescribeImagesInput{ImageIds: []string{created.Status.ImageID}})
	if err != nil || len(img.Images) != 1 || !strings.Contains(awssdk.ToString(img.Images[0].Name), "Windows_Server-2025") {
		t.Fatalf("image %s is not the Windows Server 2025 EKS image: %v %v", created.Status.ImageID, img, err)
	}
}

// TestKubeletExtraFieldsReachUserData launches a node whose node class sets upstream kubelet fields Dovetail does
// not model and finds them in the launch template's NodeConfig.
func TestKubeletExtraFieldsReachUserData(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	nc := test.EC2NodeClass("default", "dovetail").Alias("al2023@latest").Obj()
	nc.Spec.Kubelet = awsv1.KubeletConfiguration{
		"serializeImagePulls": {Raw: []byte(`false`)}, "containerLogMaxFiles": {Raw: []byte(`7`)}}
	p.resolve(t, nc)
	created, err := p.Create(context.Background(), claim("default-kubelet", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	lts, err := p.ec2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range lts.LaunchTemplates {
		v, err := p.ec2.DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: lt.LaunchTemplateId, Versions: []string{"$Latest"}})
		if err != nil || len(v.LaunchTemplateVersions) == 0 {
			t.Fatalf("DescribeLaunchTemplateVersions: %v", err)
		}
		data := v.LaunchTemplateVersions[0].LaunchTemplateData
		if awssdk.ToString(data.ImageId) != created.Status.ImageID {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(awssdk.ToString(data.UserData))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"serializeImagePulls: false", "containerLogMaxFiles: 7"} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("user data lacks %q:\n%s", want, raw)
			}
		}
		return
	}
	t.Fatalf("no launch template uses image %s", created.Status.ImageID)
}

// TestAMITermIDWinsOverSSMParameter resolves a term that sets both id and ssmParameter: the id is used, as
// Karpenter does, and the parameter (which does not exist) is not read.
func TestAMITermIDWinsOverSSMParameter(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	ctx := context.Background()
	latest, err := p.ResolveAMIs(ctx, test.EC2NodeClass("latest", "dovetail").Alias("al2023@latest").Obj())
	if err != nil || len(latest) == 0 {
		t.Fatalf("ResolveAMIs(al2023@latest) = %v, %v", latest, err)
	}
	nc := test.EC2NodeClass("both", "dovetail").Obj()
	nc.Spec.AMIFamily = awssdk.String(awsv1.AMIFamilyAL2023)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: latest[0].ID, SSMParameter: "/does/not/exist"}}
	got, err := p.ResolveAMIs(ctx, nc)
	if err != nil {
		t.Fatalf("ResolveAMIs: %v", err)
	}
	if len(got) != 1 || got[0].ID != latest[0].ID {
		t.Errorf("resolved %+v, want only %s", got, latest[0].ID)
	}
}

// TestListLabelsPerInstance: instances of one type listed together share that type's labels without sharing a
// map: each NodeClaim of the listing has the labels Get gives it, and changing one leaves the others alone.
func TestListLabelsPerInstance(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	a.resolvedNodeClass(t)
	ctx := context.Background()
	for _, name := range []string{"a-1", "a-2"} {
		if _, err := a.Create(ctx, claim(name, "m5.large")); err != nil {
			t.Fatalf("Create(%s): %v", name, err)
		}
	}
	list, err := a.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 2 {
		t.Fatalf("List: %d NodeClaims, want 2", len(list))
	}
	for _, nc := range list {
		got, err := a.Get(ctx, nc.Status.ProviderID)
		if err != nil {
			t.Fatalf("Get(%s): %v", nc.Status.ProviderID, err)
		}
		if d := cmp.Diff(got.Labels, nc.Labels); d != "" {
			t.Errorf("labels of %s listed, against Get's (-get +list):\n%s", nc.Name, d)
		}
		if nc.Labels[corev1.LabelInstanceTypeStable] != "m5.large" || nc.Labels[awsv1.LabelInstanceCPU] != "2" {
			t.Errorf("labels of %s: %v, want m5.large's", nc.Name, nc.Labels)
		}
	}
	list[0].Labels[awsv1.LabelInstanceCPU] = "changed"
	if v := list[1].Labels[awsv1.LabelInstanceCPU]; v != "2" {
		t.Errorf("changing one listed NodeClaim's labels changed another's: %s", v)
	}
}
