package awssim

import (
	"context"
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// prefixTemplate creates an AL2023 launch template whose primary interface asks for the given IPv4 and IPv6
// prefixes (and, with ipv6, a primary IPv6 address).
func (e *env) prefixTemplate(t *testing.T, name string, v4, v6 int32, ipv6 bool) {
	t.Helper()
	ctx := context.Background()
	param, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	ni := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{DeviceIndex: aws.Int32(0), Groups: []string{"sg-1"}}
	if v4 > 0 {
		ni.Ipv4PrefixCount = aws.Int32(v4)
	}
	if v6 > 0 {
		ni.Ipv6PrefixCount = aws.Int32(v6)
	}
	if ipv6 {
		ni.PrimaryIpv6, ni.Ipv6AddressCount = aws.Bool(true), aws.Int32(1)
	}
	d := &ec2types.RequestLaunchTemplateData{ImageId: param.Parameter.Value,
		UserData:          aws.String(base64.StdEncoding.EncodeToString([]byte(ipv6UserData(t, "fd00:10:96::a")))),
		NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{ni}}
	if _, err := e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: d}); err != nil {
		t.Fatal(err)
	}
}

// launchErr launches one instance and returns the fleet's error code ("" when it launched).
func launchErr(t *testing.T, e *env, lt, typ, zone string) string {
	t.Helper()
	out, err := e.ec2.CreateFleet(context.Background(), fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, override(typ, e.subnetIDs(t)[zone])))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) == 1 {
		return ""
	}
	if len(out.Errors) == 0 {
		t.Fatal("fleet launched nothing and gave no error")
	}
	return aws.ToString(out.Errors[0].ErrorCode) + ": " + aws.ToString(out.Errors[0].ErrorMessage)
}

// TestIPv6OnlySubnets: with IPv6-only subnets, DescribeSubnets reports them as EC2 reports an IPv6-only subnet (no
// cidrBlock, ipv6Native, an IPv6 address on creation, DNS64, resource-name hostnames, no free IPv4 address); an
// instance launched into one gets an IPv6 address unasked, no private IPv4 address, a resource-name DNS name and a
// Node with only its IPv6 address; IPv6 prefixes come from the subnet's range; IPv4 prefixes and Xen types are
// refused.
func TestIPv6OnlySubnets(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.IPFamily, o.IPv6OnlySubnets = IPFamilyIPv6, true })
	ctx := context.Background()
	subnets, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[string]netip.Prefix{}
	for _, sn := range subnets.Subnets {
		id := aws.ToString(sn.SubnetId)
		if sn.CidrBlock != nil || !aws.ToBool(sn.Ipv6Native) || !aws.ToBool(sn.AssignIpv6AddressOnCreation) || !aws.ToBool(sn.EnableDns64) ||
			aws.ToInt32(sn.AvailableIpAddressCount) != 0 || len(sn.Ipv6CidrBlockAssociationSet) != 1 {
			t.Errorf("subnet %s: cidr %v, ipv6Native %v, assign %v, dns64 %v, available %d, IPv6 ranges %d", id, aws.ToString(sn.CidrBlock),
				aws.ToBool(sn.Ipv6Native), aws.ToBool(sn.AssignIpv6AddressOnCreation), aws.ToBool(sn.EnableDns64),
				aws.ToInt32(sn.AvailableIpAddressCount), len(sn.Ipv6CidrBlockAssociationSet))
			continue
		}
		if o := sn.PrivateDnsNameOptionsOnLaunch; o == nil || o.HostnameType != ec2types.HostnameTypeResourceName || !aws.ToBool(o.EnableResourceNameDnsAAAARecord) {
			t.Errorf("subnet %s: privateDnsNameOptionsOnLaunch %+v", id, o)
		}
		ranges[id] = netip.MustParsePrefix(aws.ToString(sn.Ipv6CidrBlockAssociationSet[0].Ipv6CidrBlock))
	}
	for value, want := range map[string]int{"true": len(subnets.Subnets), "false": 0} {
		out, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("ipv6-native"), Values: []string{value}}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Subnets) != want {
			t.Errorf("filter ipv6-native=%s: %d subnets, want %d", value, len(out.Subnets), want)
		}
	}

	// A template asking for no IPv6 address and two IPv6 prefixes.
	e.prefixTemplate(t, "v6-prefixes", 0, 2, false)
	e.prefixTemplate(t, "v4-prefixes", 1, 0, false)
	if msg := launchErr(t, e, "v6-prefixes", "m5.large", "us-west-2a"); msg != "" {
		t.Fatal(msg)
	}
	id := e.sim.Instances()[0].ID
	e.advance(3 * time.Second)
	e.advance(time.Second)
	var info InstanceInfo
	for _, i := range e.sim.Instances() {
		if i.ID == id {
			info = i
		}
	}
	subnetRange := ranges[e.subnetIDs(t)["us-west-2a"]]
	if a, err := netip.ParseAddr(info.IPv6Address); err != nil || !subnetRange.Contains(a) || info.PrivateIP != "" {
		t.Fatalf("instance IPv6 %q (subnet %s), private IPv4 %q", info.IPv6Address, subnetRange, info.PrivateIP)
	}
	out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	inst := out.Reservations[0].Instances[0]
	wantDNS := id + ".us-west-2.compute.internal"
	if inst.PrivateIpAddress != nil || aws.ToString(inst.PrivateDnsName) != wantDNS || aws.ToString(inst.Ipv6Address) != info.IPv6Address ||
		inst.PrivateDnsNameOptions == nil || inst.PrivateDnsNameOptions.HostnameType != ec2types.HostnameTypeResourceName {
		t.Errorf("DescribeInstances: private IP %v, DNS %q (want %q), IPv6 %q, DNS options %+v", aws.ToString(inst.PrivateIpAddress),
			aws.ToString(inst.PrivateDnsName), wantDNS, aws.ToString(inst.Ipv6Address), inst.PrivateDnsNameOptions)
	}
	if len(inst.NetworkInterfaces) != 1 {
		t.Fatalf("network interfaces %+v", inst.NetworkInterfaces)
	}
	ni := inst.NetworkInterfaces[0]
	if len(ni.Ipv6Addresses) != 1 || aws.ToString(ni.Ipv6Addresses[0].Ipv6Address) != info.IPv6Address || !aws.ToBool(ni.Ipv6Addresses[0].IsPrimaryIpv6) {
		t.Errorf("interface IPv6 addresses %+v", ni.Ipv6Addresses)
	}
	var prefixes []string
	for _, p := range ni.Ipv6Prefixes {
		pre := netip.MustParsePrefix(aws.ToString(p.Ipv6Prefix))
		if pre.Bits() != 80 || !subnetRange.Contains(pre.Addr()) {
			t.Errorf("IPv6 prefix %s is not an /80 of the subnet's %s", pre, subnetRange)
		}
		prefixes = append(prefixes, pre.String())
	}
	if len(prefixes) != 2 || prefixes[0] == prefixes[1] || len(ni.Ipv4Prefixes) != 0 {
		t.Errorf("interface prefixes: IPv6 %v, IPv4 %+v; want two distinct IPv6 prefixes", prefixes, ni.Ipv4Prefixes)
	}
	enis, err := e.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
		Filters: []ec2types.Filter{{Name: aws.String("attachment.instance-id"), Values: []string{id}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(enis.NetworkInterfaces) != 1 {
		t.Fatalf("DescribeNetworkInterfaces: %d interfaces, want 1", len(enis.NetworkInterfaces))
	}
	eni := enis.NetworkInterfaces[0]
	var eniPrefixes []string
	for _, p := range eni.Ipv6Prefixes {
		eniPrefixes = append(eniPrefixes, aws.ToString(p.Ipv6Prefix))
	}
	if aws.ToString(eni.NetworkInterfaceId) != aws.ToString(ni.NetworkInterfaceId) || eni.PrivateIpAddress != nil || !aws.ToBool(eni.Ipv6Native) ||
		eni.Attachment == nil || aws.ToString(eni.Attachment.InstanceId) != id || aws.ToString(eni.PrivateDnsName) != wantDNS ||
		len(eni.Ipv6Addresses) != 1 || !cmp.Equal(eniPrefixes, prefixes) {
		t.Errorf("DescribeNetworkInterfaces: %+v, IPv6 prefixes %v (want %v)", eni, eniPrefixes, prefixes)
	}
	if _, err := e.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{"eni-0123456789abcdef0"}}); err == nil ||
		!strings.Contains(err.Error(), "InvalidNetworkInterfaceID.NotFound") {
		t.Errorf("unknown interface id: %v", err)
	}
	if !info.NodeCreated {
		t.Fatalf("no Node: %q", info.NodeJoinError)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: info.IPv6Address},
		{Type: corev1.NodeHostName, Address: wantDNS}, {Type: corev1.NodeInternalDNS, Address: wantDNS}}
	if diff := cmp.Diff(want, e.sink.node(wantDNS).Status.Addresses); diff != "" {
		t.Errorf("Node addresses (-want +got):\n%s", diff)
	}

	if got := launchErr(t, e, "v4-prefixes", "m5.large", "us-west-2a"); !strings.HasPrefix(got, "InvalidParameterValue") {
		t.Errorf("IPv4 prefixes in an IPv6-only subnet: %q, want InvalidParameterValue", got)
	}
	if got := launchErr(t, e, "v6-prefixes", "c4.large", "us-west-2a"); !strings.HasPrefix(got, "InvalidParameterCombination") {
		t.Errorf("a Xen type in an IPv6-only subnet: %q, want InvalidParameterCombination", got)
	}
}

// TestIPv6PrefixesNeedAnIPv6Range: IPv6 prefixes launch in a dual-stack subnet and are refused in an IPv4-only one;
// IPv4 prefixes launch in both. Dual-stack subnets report ip-name hostnames and no DNS64.
func TestIPv6PrefixesNeedAnIPv6Range(t *testing.T) {
	for _, family := range []string{IPFamilyIPv4, IPFamilyIPv6} {
		t.Run(family, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.IPFamily = family })
			subnets, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
			if err != nil {
				t.Fatal(err)
			}
			sn := subnets.Subnets[0]
			if sn.CidrBlock == nil || aws.ToBool(sn.Ipv6Native) || aws.ToBool(sn.EnableDns64) || sn.PrivateDnsNameOptionsOnLaunch == nil ||
				sn.PrivateDnsNameOptionsOnLaunch.HostnameType != ec2types.HostnameTypeIpName {
				t.Errorf("subnet: cidr %v, ipv6Native %v, dns64 %v, DNS options %+v", aws.ToString(sn.CidrBlock), aws.ToBool(sn.Ipv6Native),
					aws.ToBool(sn.EnableDns64), sn.PrivateDnsNameOptionsOnLaunch)
			}
			e.prefixTemplate(t, "v6-prefix", 0, 1, family == IPFamilyIPv6)
			e.prefixTemplate(t, "v4-prefix", 3, 0, false)
			got := launchErr(t, e, "v6-prefix", "m5.large", "us-west-2a")
			if (got == "") != (family == IPFamilyIPv6) {
				t.Errorf("IPv6 prefixes: launch error %q", got)
			}
			id := launchOne(t, e, "v4-prefix", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
			out, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
			inst := out.Reservations[0].Instances[0]
			if len(inst.NetworkInterfaces) != 1 || len(inst.NetworkInterfaces[0].Ipv4Prefixes) != 3 || inst.PrivateIpAddress == nil {
				t.Errorf("IPv4 prefixes: instance %+v", inst.NetworkInterfaces)
			}
		})
	}
}

// TestIPv6OnlySubnetsNeedIPv6Cluster: IPv6-only subnets are refused in an IPv4 cluster.
func TestIPv6OnlySubnetsNeedIPv6Cluster(t *testing.T) {
	o := Options{IPv6OnlySubnets: true}
	if err := defaultIPFamily(&o); err == nil {
		t.Error("IPv6-only subnets accepted in an IPv4 cluster")
	}
}

// TestIPv4SubnetsAreNotIPv6Native: an IPv4 cluster's subnets report, as EC2 does for every subnet, that they are
// not IPv6-only, give no IPv6 address on creation and name instances after their IPv4 address.
func TestIPv4SubnetsAreNotIPv6Native(t *testing.T) {
	e := newEnv(t)
	out, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	sn := out.Subnets[0]
	if sn.Ipv6Native == nil || *sn.Ipv6Native || sn.AssignIpv6AddressOnCreation == nil || *sn.AssignIpv6AddressOnCreation ||
		sn.EnableDns64 == nil || *sn.EnableDns64 || len(sn.Ipv6CidrBlockAssociationSet) != 0 {
		t.Errorf("IPv4 subnet: ipv6Native %v, assign %v, dns64 %v, IPv6 ranges %+v", sn.Ipv6Native, sn.AssignIpv6AddressOnCreation, sn.EnableDns64, sn.Ipv6CidrBlockAssociationSet)
	}
}
