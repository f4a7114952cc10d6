package awssim

import (
	"context"
	"encoding/base64"
	"net/netip"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/providers/aws/launchtemplate"
)

// ipv6UserData is AL2023 user data joining the simulated cluster with the given cluster DNS address.
func ipv6UserData(t *testing.T, dns string) string {
	t.Helper()
	b := launchtemplate.Bootstrap{Family: launchtemplate.FamilyAL2023, ClusterName: "dovetail", Endpoint: "https://127.0.0.1:6443",
		CABundle: "Q0E=", ServiceCIDR: "fd00:10:96::/108", Kubelet: launchtemplate.KubeletConfig{ClusterDNS: []string{dns}}}
	ud, err := b.Render()
	if err != nil {
		t.Fatal(err)
	}
	return ud
}

// ipv6Template creates a launch template for the AL2023 x86_64 AMI; ipv6 asks for a primary IPv6 address.
func (e *env) ipv6Template(t *testing.T, name, userData string, ipv6 bool) {
	t.Helper()
	ctx := context.Background()
	param, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	d := &ec2types.RequestLaunchTemplateData{ImageId: param.Parameter.Value,
		UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(userData)))}
	if ipv6 {
		d.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), Groups: []string{"sg-1"}, PrimaryIpv6: aws.Bool(true), Ipv6AddressCount: aws.Int32(1)}}
	}
	if _, err := e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: d}); err != nil {
		t.Fatal(err)
	}
}

// TestIPv6Cluster: an IPv6 cluster reports its IPv6 service range in EKS and IPv6 ranges on the VPC and subnets;
// an instance launched with an IPv6 address request gets an address of its subnet's range, and joins with it
// as its first InternalIP when its kubelet has an IPv6 cluster DNS address; an instance without an IPv6 address
// or with an IPv4 DNS address runs without a Node, saying why.
func TestIPv6Cluster(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.IPFamily = IPFamilyIPv6 })
	ctx := context.Background()
	cl, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dovetail")})
	if err != nil {
		t.Fatal(err)
	}
	if nc := cl.Cluster.KubernetesNetworkConfig; nc.IpFamily != ekstypes.IpFamilyIpv6 || aws.ToString(nc.ServiceIpv6Cidr) != "fd00:10:96::/108" || nc.ServiceIpv4Cidr != nil {
		t.Errorf("kubernetesNetworkConfig = family %q, IPv6 %v, IPv4 %v", nc.IpFamily, aws.ToString(nc.ServiceIpv6Cidr), aws.ToString(nc.ServiceIpv4Cidr))
	}
	vpcs, err := e.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if err != nil {
		t.Fatal(err)
	}
	vpcRange := netip.MustParsePrefix(aws.ToString(vpcs.Vpcs[0].Ipv6CidrBlockAssociationSet[0].Ipv6CidrBlock))
	subnets, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[string]netip.Prefix{}
	for _, sn := range subnets.Subnets {
		if len(sn.Ipv6CidrBlockAssociationSet) != 1 {
			t.Fatalf("subnet %s has IPv6 associations %+v", aws.ToString(sn.SubnetId), sn.Ipv6CidrBlockAssociationSet)
		}
		p := netip.MustParsePrefix(aws.ToString(sn.Ipv6CidrBlockAssociationSet[0].Ipv6CidrBlock))
		if p.Bits() != 64 || !vpcRange.Contains(p.Addr()) {
			t.Errorf("subnet range %s is not a /64 of the VPC's %s", p, vpcRange)
		}
		ranges[aws.ToString(sn.SubnetId)] = p
	}
	if len(ranges) != len(subnets.Subnets) {
		t.Errorf("subnets share IPv6 ranges: %v", ranges)
	}

	e.ipv6Template(t, "ipv6-ok", ipv6UserData(t, "fd00:10:96::a"), true)
	e.ipv6Template(t, "no-ipv6-address", ipv6UserData(t, "fd00:10:96::a"), false)
	e.ipv6Template(t, "ipv4-dns", ipv6UserData(t, "10.100.0.10"), true)
	ids := map[string]string{}
	for _, lt := range []string{"ipv6-ok", "no-ipv6-address", "ipv4-dns"} {
		ids[lt] = launchOne(t, e, lt, "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	}
	e.advance(3 * time.Second)
	e.advance(time.Second)
	byID := map[string]InstanceInfo{}
	for _, i := range e.sim.Instances() {
		byID[i.ID] = i
	}

	ok := byID[ids["ipv6-ok"]]
	a, err := netip.ParseAddr(ok.IPv6Address)
	if err != nil || !ranges[e.subnetIDs(t)["us-west-2a"]].Contains(a) {
		t.Errorf("instance IPv6 address %q is not in its subnet's range", ok.IPv6Address)
	}
	out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{ok.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.Reservations[0].Instances[0].Ipv6Address); got != ok.IPv6Address {
		t.Errorf("DescribeInstances Ipv6Address = %q, want %q", got, ok.IPv6Address)
	}
	if !ok.NodeCreated || ok.ClusterDNS != "fd00:10:96::a" || ok.NodeJoinError != "" {
		t.Fatalf("IPv6 instance: node created %v, cluster DNS %q, join error %q", ok.NodeCreated, ok.ClusterDNS, ok.NodeJoinError)
	}
	node := e.sink.node(ok.NodeName)
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ok.IPv6Address}, {Type: corev1.NodeInternalIP, Address: ok.PrivateIP},
		{Type: corev1.NodeHostName, Address: ok.NodeName}, {Type: corev1.NodeInternalDNS, Address: ok.NodeName}}
	if diff := cmp.Diff(want, node.Status.Addresses); diff != "" {
		t.Errorf("Node addresses (-want +got):\n%s", diff)
	}

	for _, lt := range []string{"no-ipv6-address", "ipv4-dns"} {
		i := byID[ids[lt]]
		if i.NodeCreated || !i.NodeWithheld || i.NodeJoinError == "" {
			t.Errorf("%s: node created %v, withheld %v, join error %q; want no Node and a reason", lt, i.NodeCreated, i.NodeWithheld, i.NodeJoinError)
		}
	}
	if i := byID[ids["no-ipv6-address"]]; i.IPv6Address != "" {
		t.Errorf("an instance whose template asks for no IPv6 address got %s", i.IPv6Address)
	}
}

// TestIPv4ClusterHasNoIPv6: the default IPv4 cluster has no IPv6 ranges, gives no IPv6 address even when asked,
// and reports the IPv4 service range.
func TestIPv4ClusterHasNoIPv6(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cl, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dovetail")})
	if err != nil {
		t.Fatal(err)
	}
	if nc := cl.Cluster.KubernetesNetworkConfig; nc.IpFamily != ekstypes.IpFamilyIpv4 || aws.ToString(nc.ServiceIpv4Cidr) != "10.100.0.0/16" || nc.ServiceIpv6Cidr != nil {
		t.Errorf("kubernetesNetworkConfig = %+v", nc)
	}
	subnets, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := subnets.Subnets[0].Ipv6CidrBlockAssociationSet; len(got) != 0 {
		t.Errorf("IPv4 subnet has IPv6 ranges %+v", got)
	}
	e.ipv6Template(t, "asks-ipv6", ipv6UserData(t, "10.100.0.10"), true)
	id := launchOne(t, e, "asks-ipv6", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	e.advance(3 * time.Second)
	for _, i := range e.sim.Instances() {
		if i.ID == id && (i.IPv6Address != "" || !i.NodeCreated) {
			t.Errorf("IPv4 cluster instance: IPv6 %q, node created %v", i.IPv6Address, i.NodeCreated)
		}
	}
}

// TestParseUserDataClusterDNS: the simulator reads the kubelet's cluster DNS address from every AMI family's
// user data as Dovetail renders it.
func TestParseUserDataClusterDNS(t *testing.T) {
	for _, family := range []string{launchtemplate.FamilyAL2023, launchtemplate.FamilyAL2, launchtemplate.FamilyBottlerocket, launchtemplate.FamilyWindows2022} {
		t.Run(family, func(t *testing.T) {
			b := launchtemplate.Bootstrap{Family: family, ClusterName: "dovetail", Endpoint: "https://127.0.0.1:6443", CABundle: "Q0E=",
				ServiceCIDR: "fd00:10:96::/108", Kubelet: launchtemplate.KubeletConfig{MaxPods: 29, ClusterDNS: []string{"fd00:10:96::a"}}}
			ud, err := b.Render()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseUserData(base64.StdEncoding.EncodeToString([]byte(ud)))
			if err != nil {
				t.Fatal(err)
			}
			if got.ClusterDNS != "fd00:10:96::a" {
				t.Errorf("ClusterDNS = %q from:\n%s", got.ClusterDNS, ud)
			}
		})
	}
}
