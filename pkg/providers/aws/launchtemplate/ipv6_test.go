package launchtemplate

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// ipv6Sample is the bootstrap of a node in an IPv6 cluster: the kube-dns address and the service range are IPv6.
func ipv6Sample(family string) Bootstrap {
	b := sample(family, "")
	b.ServiceCIDR = "fd00:10:96::/108"
	b.Kubelet.ClusterDNS = []string{"fd00:10:96::a"}
	return b
}

// TestIPv6UserData: every AMI family hands the node the IPv6 DNS address; AL2's bootstrap.sh also gets
// --ip-family ipv6 and AL2023's NodeConfig the IPv6 service range; an IPv4 cluster gets neither.
func TestIPv6UserData(t *testing.T) {
	for _, tc := range []struct {
		family     string
		ipv6, ipv4 []string // substrings that must appear in the IPv6 / the IPv4 user data
		notIPv4    []string // substrings that must not appear in the IPv4 user data
	}{
		{FamilyAL2023, []string{"cidr: fd00:10:96::/108", "- fd00:10:96::a"}, []string{"cidr: 10.100.0.0/16"}, []string{"fd00"}},
		{FamilyAL2, []string{"--b64-cluster-ca 'Q0E=' --ip-family ipv6 --dns-cluster-ip 'fd00:10:96::a'"}, []string{"--dns-cluster-ip '10.100.0.10'"}, []string{"--ip-family"}},
		{FamilyBottlerocket, []string{`cluster-dns-ip = "fd00:10:96::a"`}, []string{`cluster-dns-ip = "10.100.0.10"`}, []string{"fd00"}},
		{FamilyWindows2022, []string{"-DNSClusterIP 'fd00:10:96::a'"}, []string{"-DNSClusterIP '10.100.0.10'"}, []string{"fd00"}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			v6, err := ipv6Sample(tc.family).Render()
			if err != nil {
				t.Fatal(err)
			}
			v4, err := sample(tc.family, "").Render()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.ipv6 {
				if !strings.Contains(v6, s) {
					t.Errorf("IPv6 user data lacks %q:\n%s", s, v6)
				}
			}
			for _, s := range tc.ipv4 {
				if !strings.Contains(v4, s) {
					t.Errorf("IPv4 user data lacks %q:\n%s", s, v4)
				}
			}
			for _, s := range tc.notIPv4 {
				if strings.Contains(v4, s) {
					t.Errorf("IPv4 user data has %q:\n%s", s, v4)
				}
			}
		})
	}
}

// TestIPv6LaunchTemplateData: in an IPv6 cluster the primary network interface gets a primary IPv6 address (one
// IPv6 address, marked primary) and carries the security groups and public-IP choice; an IPv4 cluster keeps the
// security groups on the template unless a public-IP choice needs an interface. The metadata options are the
// node class's (httpProtocolIPv6 as set there).
func TestIPv6LaunchTemplateData(t *testing.T) {
	nc := func(publicIP *bool, ipv6Metadata string) *awsv1.EC2NodeClass {
		n := &awsv1.EC2NodeClass{}
		n.Name = "default"
		n.Spec.AssociatePublicIPAddress = publicIP
		if ipv6Metadata != "" {
			n.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPProtocolIPv6: aws.String(ipv6Metadata)}
		}
		return n
	}
	sgs := []string{"sg-1", "sg-2"}
	for _, tc := range []struct {
		name     string
		spec     Spec
		wantNICs []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
		wantSGs  []string
		wantIMDS ec2types.LaunchTemplateInstanceMetadataProtocolIpv6
	}{
		{"IPv4", Spec{NodeClass: nc(nil, ""), SecurityGroupIDs: sgs}, nil, sgs, ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled},
		{"IPv4 with a public IP", Spec{NodeClass: nc(aws.Bool(true), ""), SecurityGroupIDs: sgs},
			[]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: aws.Bool(true), Groups: sgs}},
			nil, ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled},
		{"IPv6", Spec{NodeClass: nc(nil, ""), SecurityGroupIDs: sgs, IPv6: true},
			[]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0), Groups: sgs, PrimaryIpv6: aws.Bool(true), Ipv6AddressCount: aws.Int32(1)}},
			nil, ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Enabled},
		{"IPv6 with a public IP and the IPv6 metadata endpoint off", Spec{NodeClass: nc(aws.Bool(false), "disabled"), SecurityGroupIDs: sgs, IPv6: true},
			[]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: aws.Bool(false), Groups: sgs, PrimaryIpv6: aws.Bool(true), Ipv6AddressCount: aws.Int32(1)}},
			nil, ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled},
		{"IPv6 with the IPv6 metadata endpoint on", Spec{NodeClass: nc(nil, "enabled"), SecurityGroupIDs: sgs, IPv6: true},
			[]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0), Groups: sgs, PrimaryIpv6: aws.Bool(true), Ipv6AddressCount: aws.Int32(1)}},
			nil, ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Enabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Data(tc.spec)
			if diff := cmp.Diff(tc.wantNICs, d.NetworkInterfaces, cmpopts.IgnoreUnexported(ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{})); diff != "" {
				t.Errorf("network interfaces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSGs, d.SecurityGroupIds); diff != "" {
				t.Errorf("security groups (-want +got):\n%s", diff)
			}
			if got := d.MetadataOptions.HttpProtocolIpv6; got != tc.wantIMDS {
				t.Errorf("HttpProtocolIpv6 = %q, want %q", got, tc.wantIMDS)
			}
		})
	}
}

// TestIPv6ChangesTheTemplateName: the same node class gives different launch templates in an IPv4 and an IPv6
// cluster.
func TestIPv6ChangesTheTemplateName(t *testing.T) {
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "default"
	v4, err := Name(tags.Cluster{Name: "demo", UID: "u1"}, Spec{NodeClass: nc, ImageID: "ami-1"})
	if err != nil {
		t.Fatal(err)
	}
	v6, err := Name(tags.Cluster{Name: "demo", UID: "u1"}, Spec{NodeClass: nc, ImageID: "ami-1", IPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	if v4 == v6 {
		t.Errorf("IPv4 and IPv6 specs share the launch template name %s", v4)
	}
}

// TestIPv6PrefixesAndInterfaces: ipPrefixCount asks for IPv4 /28 prefixes in an IPv4 cluster and IPv6 /80
// prefixes in an IPv6 one (as Karpenter does); in an IPv6 cluster every interface carrying IP traffic (EFA and
// interface, not efa-only) gets a primary IPv6 address, and none asks for IPv4 settings that an IPv6-only subnet
// could not give.
func TestIPv6PrefixesAndInterfaces(t *testing.T) {
	sgs := []string{"sg-1"}
	nc := func(prefixes *int32, nis ...awsv1.NetworkInterface) *awsv1.EC2NodeClass {
		n := &awsv1.EC2NodeClass{}
		n.Name = "default"
		n.Spec.IPPrefixCount = prefixes
		n.Spec.NetworkInterfaces = nis
		return n
	}
	type nic = ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
	v6 := func(n nic, prefixes *int32) nic {
		n.PrimaryIpv6, n.Ipv6AddressCount, n.Ipv6PrefixCount = aws.Bool(true), aws.Int32(1), prefixes
		return n
	}
	two := aws.Int32(2)
	for _, tc := range []struct {
		name string
		spec Spec
		want []nic
	}{
		{"IPv4 prefixes", Spec{NodeClass: nc(two), SecurityGroupIDs: sgs},
			[]nic{{DeviceIndex: aws.Int32(0), Groups: sgs, Ipv4PrefixCount: two}}},
		{"IPv6 prefixes", Spec{NodeClass: nc(two), SecurityGroupIDs: sgs, IPv6: true},
			[]nic{v6(nic{DeviceIndex: aws.Int32(0), Groups: sgs}, two)}},
		{"IPv6 EFA interfaces", Spec{NodeClass: nc(nil), SecurityGroupIDs: sgs, IPv6: true, EFACount: 2},
			[]nic{
				v6(nic{NetworkCardIndex: aws.Int32(0), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("efa"), Groups: sgs}, nil),
				v6(nic{NetworkCardIndex: aws.Int32(1), DeviceIndex: aws.Int32(1), InterfaceType: aws.String("efa"), Groups: sgs}, nil),
			}},
		{"IPv6 spec.networkInterfaces", Spec{NodeClass: nc(two,
			awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface},
			awsv1.NetworkInterface{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}), SecurityGroupIDs: sgs, IPv6: true},
			[]nic{
				v6(nic{NetworkCardIndex: aws.Int32(0), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("interface"), Groups: sgs}, two),
				{NetworkCardIndex: aws.Int32(1), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("efa-only"), Groups: sgs},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Data(tc.spec).NetworkInterfaces, cmpopts.IgnoreUnexported(nic{})); diff != "" {
				t.Errorf("network interfaces (-want +got):\n%s", diff)
			}
		})
	}
}
