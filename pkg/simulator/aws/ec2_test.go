package awssim

import (
	"context"
	"encoding/base64"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
)

func TestDescribeAvailabilityZones(t *testing.T) {
	e := newEnv(t)
	out, err := e.ec2.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range out.AvailabilityZones {
		got = append(got, aws.ToString(z.ZoneName)+"/"+aws.ToString(z.ZoneId)+"/"+string(z.State)+"/"+aws.ToString(z.ZoneType))
	}
	want := []string{"us-west-2a/usw2-az1/available/availability-zone", "us-west-2b/usw2-az2/available/availability-zone",
		"us-west-2c/usw2-az3/available/availability-zone"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("zones (-want +got):\n%s", d)
	}
}

func TestDescribeInstanceTypesPaginated(t *testing.T) {
	e := newEnv(t)
	p := ec2.NewDescribeInstanceTypesPaginator(e.ec2, &ec2.DescribeInstanceTypesInput{
		MaxResults: aws.Int32(100),
		Filters: []ec2types.Filter{{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}}},
	})
	pages := 0
	seen := map[string]ec2types.InstanceTypeInfo{}
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range out.InstanceTypes {
			if _, dup := seen[string(it.InstanceType)]; dup {
				t.Errorf("type %s listed twice", it.InstanceType)
			}
			seen[string(it.InstanceType)] = it
		}
	}
	if pages < 5 || len(seen) < 500 {
		t.Errorf("got %d types in %d pages, want >= 500 in >= 5 pages", len(seen), pages)
	}
	m5 := seen["m5.large"]
	if aws.ToInt32(m5.VCpuInfo.DefaultVCpus) != 2 || aws.ToInt64(m5.MemoryInfo.SizeInMiB) != 8192 ||
		aws.ToInt32(m5.NetworkInfo.MaximumNetworkInterfaces) != 3 || aws.ToInt32(m5.NetworkInfo.Ipv4AddressesPerInterface) != 10 ||
		m5.Hypervisor != ec2types.InstanceTypeHypervisorNitro || aws.ToString(m5.ProcessorInfo.Manufacturer) != "Intel" ||
		len(m5.SupportedUsageClasses) != 2 || aws.ToInt32(m5.EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps) != 650 {
		t.Errorf("m5.large decoded wrong: %+v", m5)
	}
	g5 := seen["g5.xlarge"]
	if g5.GpuInfo == nil || len(g5.GpuInfo.Gpus) != 1 || aws.ToString(g5.GpuInfo.Gpus[0].Manufacturer) != "NVIDIA" ||
		aws.ToInt32(g5.GpuInfo.Gpus[0].Count) != 1 || aws.ToInt32(g5.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB) != 24576 {
		t.Errorf("g5.xlarge GPU decoded wrong: %+v", g5.GpuInfo)
	}
	if g5.InstanceStorageInfo == nil || aws.ToInt64(g5.InstanceStorageInfo.TotalSizeInGB) != 250 {
		t.Errorf("g5.xlarge storage decoded wrong: %+v", g5.InstanceStorageInfo)
	}
	if inf := seen["inf2.xlarge"]; inf.NeuronInfo == nil || len(inf.NeuronInfo.NeuronDevices) != 1 ||
		inf.NeuronInfo.NeuronDevices[0].CoreInfo == nil || aws.ToInt32(inf.NeuronInfo.NeuronDevices[0].CoreInfo.Count) != 2 {
		t.Errorf("inf2.xlarge neuron decoded wrong: %+v", inf.NeuronInfo)
	}
	if a := seen["m7g.large"].ProcessorInfo.SupportedArchitectures; len(a) != 1 || a[0] != ec2types.ArchitectureTypeArm64 {
		t.Errorf("m7g.large arch = %v", a)
	}
}

func TestDescribeInstanceTypesErrors(t *testing.T) {
	e := newEnv(t)
	_, err := e.ec2.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{{Name: aws.String("no-such-filter"), Values: []string{"x"}}}})
	assertCode(t, err, "InvalidParameterValue")
	_, err = e.ec2.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"m5.nope"}})
	assertCode(t, err, "InvalidInstanceType")
}

func assertCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an API error (want %s)", err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("error code = %s (%s), want %s", ae.ErrorCode(), ae.ErrorMessage(), code)
	}
}

func TestDescribeInstanceTypeOfferingsAndSpotPrices(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(e.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone})
	zones := map[string]int{}
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.InstanceTypeOfferings {
			zones[aws.ToString(o.Location)]++
			n++
		}
	}
	if len(zones) != 3 || n < 1000 {
		t.Errorf("offerings per zone = %v (total %d)", zones, n)
	}
	sp := ec2.NewDescribeSpotPriceHistoryPaginator(e.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(e.clock.Now()),
		InstanceTypes: []ec2types.InstanceType{"m5.large"}})
	prices := map[string]string{}
	for sp.HasMorePages() {
		out, err := sp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range out.SpotPriceHistory {
			prices[aws.ToString(h.AvailabilityZone)] = aws.ToString(h.SpotPrice)
		}
	}
	if len(prices) != 3 {
		t.Errorf("m5.large spot prices = %v, want one per zone", prices)
	}
}

func TestDescribeNetworkAndImages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	disc := []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"dovetail"}}}
	sn, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: disc})
	if err != nil {
		t.Fatal(err)
	}
	if len(sn.Subnets) != 3 || aws.ToInt32(sn.Subnets[0].AvailableIpAddressCount) < 1000 || aws.ToString(sn.Subnets[0].AvailabilityZoneId) == "" {
		t.Errorf("subnets = %+v", sn.Subnets)
	}
	none, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"other"}}}})
	if err != nil || len(none.Subnets) != 0 {
		t.Errorf("other cluster subnets = %v, %v", none, err)
	}
	_, err = e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-nope"}})
	assertCode(t, err, "InvalidSubnetID.NotFound")
	sg, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: disc})
	if err != nil || len(sg.SecurityGroups) != 1 || aws.ToString(sg.SecurityGroups[0].GroupName) != "dovetail-node" {
		t.Errorf("security groups = %+v, %v", sg, err)
	}
	byName, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"default"}}}})
	if err != nil || len(byName.SecurityGroups) != 1 {
		t.Errorf("security group by name = %+v, %v", byName, err)
	}
	param, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	amiID := aws.ToString(param.Parameter.Value)
	imgs, err := e.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{amiID}})
	if err != nil || len(imgs.Images) != 1 || imgs.Images[0].Architecture != ec2types.ArchitectureValuesArm64 ||
		!strings.Contains(aws.ToString(imgs.Images[0].Name), "al2023-arm64-standard-1.34") {
		t.Errorf("image = %+v, %v", imgs, err)
	}
	named, err := e.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"bottlerocket-aws-k8s-1.34-x86_64-*"}}}})
	if err != nil || len(named.Images) != 2 {
		t.Errorf("bottlerocket x86_64 images = %d, %v; want 2 releases", len(named.Images), err)
	}
	for _, path := range []string{
		"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.34/amazon-linux-2/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.34/amazon-linux-2-arm64/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.34/amazon-linux-2-gpu/recommended/image_id",
		"/aws/service/bottlerocket/aws-k8s-1.34/arm64/latest/image_id",
		"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/latest/image_id",
	} {
		if _, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(path)}); err != nil {
			t.Errorf("GetParameter %s: %v", path, err)
		}
	}
	_, err = e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/nope")})
	assertCode(t, err, "ParameterNotFound")
}

// launchTemplate creates a launch template for the al2023 AMI of arch with the given user data.
func (e *env) launchTemplate(t *testing.T, name, arch, userData string) {
	t.Helper()
	ctx := context.Background()
	param, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/" + arch + "/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            param.Parameter.Value,
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String("/dev/xvda"),
				Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(80)}}},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: aws.String("from-template"), Value: aws.String("yes")}}}},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("dovetail")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) subnetIDs(t *testing.T) map[string]string {
	t.Helper()
	out, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, s := range out.Subnets {
		ids[aws.ToString(s.AvailabilityZone)] = aws.ToString(s.SubnetId)
	}
	return ids
}

func fleetInput(lt string, capType ec2types.DefaultTargetCapacityType, overrides ...ec2types.FleetLaunchTemplateOverridesRequest) *ec2.CreateFleetInput {
	return &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: capType},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")},
			{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")},
			{Key: aws.String("kubernetes.io/cluster/dovetail"), Value: aws.String("owned")}}}},
	}
}

func override(typ, subnet string) ec2types.FleetLaunchTemplateOverridesRequest {
	return ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(subnet)}
}

func TestCreateFleetPicksCheapestAndHonoursICE(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-amd64", "x86_64", "")
	subnets := e.subnetIDs(t)
	var ovs []ec2types.FleetLaunchTemplateOverridesRequest
	for _, typ := range []string{"m5.large", "c5.large", "m5.xlarge"} {
		for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
			ovs = append(ovs, override(typ, subnets[z]))
		}
	}
	// Find the cheapest spot pool to fault it.
	type pool struct {
		typ, zone string
		price     float64
	}
	var pools []pool
	for _, typ := range []string{"m5.large", "c5.large", "m5.xlarge"} {
		it, _ := e.sim.Catalog().Type(typ)
		for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
			p, _ := it.SpotPrice("us-west-2", z)
			pools = append(pools, pool{typ, z, p})
		}
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].price < pools[j].price })
	e.sim.AddCapacityFault(CapacityFault{InstanceType: pools[0].typ, Zone: pools[0].zone, CapacityType: "spot"})

	out, err := e.ec2.CreateFleet(ctx, fleetInput("lt-amd64", ec2types.DefaultTargetCapacityTypeSpot, ovs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("instances = %+v", out.Instances)
	}
	got := out.Instances[0]
	if string(got.InstanceType) != pools[1].typ || aws.ToString(got.LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != pools[1].zone ||
		got.Lifecycle != ec2types.InstanceLifecycleSpot {
		t.Errorf("launched %s in %s (%s), want second-cheapest %s in %s", got.InstanceType,
			aws.ToString(got.LaunchTemplateAndOverrides.Overrides.AvailabilityZone), got.Lifecycle, pools[1].typ, pools[1].zone)
	}
	var ice []string
	for _, fe := range out.Errors {
		ice = append(ice, aws.ToString(fe.ErrorCode)+" "+string(fe.LaunchTemplateAndOverrides.Overrides.InstanceType)+" "+
			aws.ToString(fe.LaunchTemplateAndOverrides.Overrides.AvailabilityZone))
	}
	if d := cmp.Diff([]string{"InsufficientInstanceCapacity " + pools[0].typ + " " + pools[0].zone}, ice); d != "" {
		t.Errorf("fleet errors (-want +got):\n%s", d)
	}
	// The state counts the refusal per pool and the calls per service.
	st := e.sim.Snapshot()
	if d := cmp.Diff(map[string]int{pools[0].typ + "/" + pools[0].zone + "/spot": 1}, st.CapacityRefusals); d != "" {
		t.Errorf("capacity refusals (-want +got):\n%s", d)
	}
	// One instance launched so far, tagged for NodeClaim default-abcde by fleetInput.
	if d := cmp.Diff(map[string]int{"default-abcde": 1}, st.InstancesByNodeClaim); d != "" {
		t.Errorf("launches by nodeclaim (-want +got):\n%s", d)
	}
	total := 0
	for _, n := range st.Calls {
		total += n
	}
	byService := 0
	for _, n := range st.ServiceCalls {
		byService += n
	}
	if byService != total || st.ServiceCalls["ec2"] < st.Calls["CreateFleet"]+st.Calls["CreateLaunchTemplate"] || total == 0 {
		t.Errorf("calls by service %v do not add up to the calls by action %v", st.ServiceCalls, st.Calls)
	}

	// All pools faulted: 200 with only errors.
	e.sim.AddCapacityFault(CapacityFault{InstanceType: "*", CapacityType: "spot"})
	out, err = e.ec2.CreateFleet(ctx, fleetInput("lt-amd64", ec2types.DefaultTargetCapacityTypeSpot, ovs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 0 || len(out.Errors) != len(ovs) {
		t.Errorf("all-ICE fleet: %d instances, %d errors (want 0, %d)", len(out.Instances), len(out.Errors), len(ovs))
	}
	// On-demand still works and picks the cheapest on-demand type.
	out, err = e.ec2.CreateFleet(ctx, fleetInput("lt-amd64", ec2types.DefaultTargetCapacityTypeOnDemand, ovs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "c5.large" || out.Instances[0].Lifecycle != ec2types.InstanceLifecycleOnDemand {
		t.Errorf("on-demand fleet = %+v", out.Instances)
	}
	// Unknown launch template is reported in the error set.
	out, err = e.ec2.CreateFleet(ctx, fleetInput("missing", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", subnets["us-west-2a"])))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("missing template errors = %+v", out.Errors)
	}
}

func TestCreateFleetArchMismatch(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-arm", "arm64", "")
	out, err := e.ec2.CreateFleet(context.Background(), fleetInput("lt-arm", ec2types.DefaultTargetCapacityTypeOnDemand,
		override("m5.large", e.subnetIDs(t)["us-west-2a"]), override("m7g.large", e.subnetIDs(t)["us-west-2a"])))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m7g.large" {
		t.Errorf("instances = %+v", out.Instances)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterValue" {
		t.Errorf("errors = %+v", out.Errors)
	}
}

func launchOne(t *testing.T, e *env, lt, typ, zone string, capType ec2types.DefaultTargetCapacityType) string {
	t.Helper()
	out, err := e.ec2.CreateFleet(context.Background(), fleetInput(lt, capType, override(typ, e.subnetIDs(t)[zone])))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 {
		t.Fatalf("fleet launched nothing: %+v", out.Errors)
	}
	return out.Instances[0].InstanceIds[0]
}

func TestDescribeInstancesFiltersAndPagination(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-test", "x86_64", "")
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, launchOne(t, e, "lt-test", "m5.large", "us-west-2b", ec2types.DefaultTargetCapacityTypeOnDemand))
	}
	if _, err := e.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids[:2], Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	desc, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids[:1]})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	tags := map[string]string{}
	for _, tg := range inst.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags["karpenter.sh/nodepool"] != "default" || tags["from-template"] != "yes" || tags["team"] != "a" ||
		!strings.HasPrefix(tags["aws:ec2:fleet-id"], "fleet-") {
		t.Errorf("tags = %v", tags)
	}
	if inst.State.Name != ec2types.InstanceStateNamePending || aws.ToString(inst.Placement.AvailabilityZone) != "us-west-2b" ||
		!strings.HasPrefix(aws.ToString(inst.PrivateIpAddress), "10.0.64.") ||
		aws.ToString(inst.PrivateDnsName) != "ip-"+strings.ReplaceAll(aws.ToString(inst.PrivateIpAddress), ".", "-")+".us-west-2.compute.internal" ||
		inst.InstanceType != "m5.large" || inst.LaunchTime == nil || inst.InstanceLifecycle != "" {
		t.Errorf("instance = %+v", inst)
	}
	count := func(in *ec2.DescribeInstancesInput) (int, int) {
		t.Helper()
		p := ec2.NewDescribeInstancesPaginator(e.ec2, in)
		n, pages := 0, 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, r := range out.Reservations {
				n += len(r.Instances)
			}
		}
		return n, pages
	}
	tests := []struct {
		name    string
		filters []ec2types.Filter
		max     *int32
		want    int
		pages   int
	}{
		{"all paginated", nil, aws.Int32(5), 7, 2},
		{"tag key", []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodepool"}}}, nil, 7, 1},
		{"tag value", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"a"}}}, nil, 2, 1},
		{"tag wildcard", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"*"}}}, nil, 2, 1},
		{"missing tag", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"b"}}}, nil, 0, 1},
		{"state", []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}, nil, 7, 1},
		{"state none", []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"terminated"}}}, nil, 0, 1},
		{"id", []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids[3:5]}}, nil, 2, 1},
		{"and", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"a"}}, {Name: aws.String("instance-id"), Values: ids[1:3]}}, nil, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, pages := count(&ec2.DescribeInstancesInput{Filters: tc.filters, MaxResults: tc.max})
			if n != tc.want || pages != tc.pages {
				t.Errorf("got %d instances in %d pages, want %d in %d", n, pages, tc.want, tc.pages)
			}
		})
	}
	_, err = e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0000000000000dead"}})
	assertCode(t, err, "InvalidInstanceID.NotFound")
}

func TestTerminateInstancesLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-test", "x86_64", "")
	id := launchOne(t, e, "lt-test", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeSpot)
	state := func() ec2types.InstanceStateName {
		t.Helper()
		out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Reservations[0].Instances[0].State.Name
	}
	if s := state(); s != ec2types.InstanceStateNamePending {
		t.Fatalf("state = %s", s)
	}
	e.advance(2 * time.Second)
	if s := state(); s != ec2types.InstanceStateNameRunning {
		t.Fatalf("state = %s", s)
	}
	out, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if out.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameShuttingDown ||
		out.TerminatingInstances[0].PreviousState.Name != ec2types.InstanceStateNameRunning {
		t.Errorf("terminate = %+v", out.TerminatingInstances[0])
	}
	e.advance(2 * time.Second)
	if s := state(); s != ec2types.InstanceStateNameTerminated {
		t.Fatalf("state = %s", s)
	}
	e.advance(time.Minute)
	_, err = e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	assertCode(t, err, "InvalidInstanceID.NotFound")
	_, err = e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	assertCode(t, err, "InvalidInstanceID.NotFound")
}

func TestThrottlingIsRetryable(t *testing.T) {
	e := newEnv(t)
	e.sim.SetFaults(Faults{Throttle: ThrottleFault{Rate: 1, Actions: []string{"DescribeSubnets"}}})
	_, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	assertCode(t, err, "RequestLimitExceeded")
	if !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
		t.Errorf("SDK does not see %v as throttling", err)
	}
	if _, err := e.ec2.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{}); err != nil {
		t.Errorf("unthrottled action failed: %v", err)
	}
	e.sim.ClearFaults()
	if _, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("after clear: %v", err)
	}
	// A fault limited to services throttles only theirs.
	e.sim.SetFaults(Faults{Throttle: ThrottleFault{Rate: 1, Services: []string{"ssm"}}})
	if _, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("EC2 call throttled by an SSM-only fault: %v", err)
	}
	e.sim.SetFaults(Faults{Throttle: ThrottleFault{Rate: 1, Services: []string{"ec2"}}})
	_, err = e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	assertCode(t, err, "RequestLimitExceeded")
	if err := validateFaults(Faults{Throttle: ThrottleFault{Rate: 1, Services: []string{"ec3"}}}); err == nil || !strings.Contains(err.Error(), `"ec3"`) {
		t.Errorf("unknown service: error %v, want one naming it", err)
	}
}

func TestLaunchTemplates(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "one", "x86_64", "")
	e.launchTemplate(t, "two", "arm64", "")
	_, err := e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("one"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}})
	assertCode(t, err, "InvalidLaunchTemplateName.AlreadyExistsException")
	out, err := e.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.k8s.aws/cluster"), Values: []string{"dovetail"}}}})
	if err != nil || len(out.LaunchTemplates) != 2 {
		t.Fatalf("describe = %+v, %v", out, err)
	}
	_, err = e.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}})
	assertCode(t, err, "InvalidLaunchTemplateName.NotFoundException")
	if _, err := e.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("one")}); err != nil {
		t.Fatal(err)
	}
	out, err = e.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(out.LaunchTemplates) != 1 || aws.ToString(out.LaunchTemplates[0].LaunchTemplateName) != "two" {
		t.Fatalf("after delete = %+v, %v", out, err)
	}
	_, err = e.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("one")})
	assertCode(t, err, "InvalidLaunchTemplateName.NotFoundException")
}

func TestAccountsAreIsolated(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-test", "x86_64", "")
	launchOne(t, e, "lt-test", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	other := ec2.NewFromConfig(sdkConfig(e.srv, "AKIDACCOUNTB"))
	out, err := other.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if err != nil || len(out.Reservations) != 0 {
		t.Errorf("account B sees %+v, %v", out, err)
	}
	lts, err := other.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(lts.LaunchTemplates) != 0 {
		t.Errorf("account B sees templates %+v, %v", lts, err)
	}
}

func TestEventualConsistencyFault(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-ec", "x86_64", "")
	e.sim.SetFaults(Faults{NotFoundAfterLaunch: Duration(2 * time.Second)})
	id := launchOne(t, e, "lt-ec", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	_, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	assertCode(t, err, "InvalidInstanceID.NotFound")
	e.advance(2 * time.Second)
	if _, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Errorf("after the consistency window: %v", err)
	}
}

func TestSpotPriceOverrideChangesFleetChoice(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-spot", "x86_64", "")
	sub := e.subnetIDs(t)["us-west-2a"]
	ovs := []ec2types.FleetLaunchTemplateOverridesRequest{override("m5.large", sub), override("c5.large", sub)}
	first, err := e.ec2.CreateFleet(ctx, fleetInput("lt-spot", ec2types.DefaultTargetCapacityTypeSpot, ovs...))
	if err != nil || len(first.Instances) != 1 {
		t.Fatalf("fleet = %+v, %v", first, err)
	}
	cheap := string(first.Instances[0].InstanceType)
	if err := e.sim.SetSpotPrice(SpotPriceRequest{InstanceType: cheap, Zone: "us-west-2a", Price: 99}); err != nil {
		t.Fatal(err)
	}
	second, err := e.ec2.CreateFleet(ctx, fleetInput("lt-spot", ec2types.DefaultTargetCapacityTypeSpot, ovs...))
	if err != nil || len(second.Instances) != 1 || string(second.Instances[0].InstanceType) == cheap {
		t.Fatalf("after raising %s: %+v, %v", cheap, second, err)
	}
	hist, err := e.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{ec2types.InstanceType(cheap)},
		AvailabilityZone: aws.String("us-west-2a")})
	if err != nil || len(hist.SpotPriceHistory) != 1 || aws.ToString(hist.SpotPriceHistory[0].SpotPrice) != "99.000000" {
		t.Errorf("history = %+v, %v", hist, err)
	}
	if err := e.sim.SetSpotPrice(SpotPriceRequest{InstanceType: "m5.nope", Zone: "us-west-2a", Price: 1}); err == nil {
		t.Error("unknown type accepted")
	}
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"unknown region", Options{Region: "mars-1"}},
		{"unknown zone", Options{Zones: []string{"us-west-2z"}}},
		{"bad version", Options{KubernetesVersion: "v1"}},
		{"bad queue", Options{Queues: []string{"has space"}}},
		{"negative timing", Options{Timing: Timing{Pending: -time.Second}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestDryRun: an EC2 call with DryRun=true is answered DryRunOperation (HTTP 412) when the caller may make it and
// UnauthorizedOperation when the policy denies it, and changes nothing either way.
func TestDryRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		want   string
	}{
		{name: "allowed", want: "DryRunOperation"},
		{name: "denied", policy: `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["ec2:Describe*", "ec2:CreateLaunchTemplate", "ec2:CreateTags", "ssm:GetParameter"], "Resource": "*"}]}`, want: "UnauthorizedOperation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				if tc.policy != "" {
					o.IAMPolicy = []byte(tc.policy)
				}
			})
			ctx := context.Background()
			e.launchTemplate(t, "lt-dry", "x86_64", "")
			input := fleetInput("lt-dry", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", e.subnetIDs(t)["us-west-2a"]))
			input.DryRun = aws.Bool(true)
			_, err := e.ec2.CreateFleet(ctx, input)
			code, status := apiCode(t, err)
			wantStatus := map[string]int{"DryRunOperation": 412, "UnauthorizedOperation": 403}[tc.want]
			if code != tc.want || status != wantStatus {
				t.Errorf("dry-run CreateFleet = %s (HTTP %d), want %s (HTTP %d)", code, status, tc.want, wantStatus)
			}
			_, err = e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
				LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-dry")}})
			if code, _ := apiCode(t, err); code != tc.want {
				t.Errorf("dry-run RunInstances = %s, want %s", code, tc.want)
			}
			if got := len(e.sim.Instances()); got != 0 {
				t.Errorf("dry runs launched %d instances, want none", got)
			}
			if tc.policy != "" {
				return
			}
			_, err = e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("lt-never"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}})
			assertCode(t, err, "DryRunOperation")
			_, err = e.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"lt-never"}})
			assertCode(t, err, "InvalidLaunchTemplateName.NotFoundException")
		})
	}
}
