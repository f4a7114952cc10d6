package launchtemplate

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

type ni = ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest

// TestLaunchFeaturesData: placement, tenancy, interfaces (spec.networkInterfaces, EFA per card, or a primary
// interface carrying prefixes, public address and connection tracking) and CPU options in the template data.
func TestLaunchFeaturesData(t *testing.T) {
	sgs := []string{"sg-1"}
	ct := &awsv1.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(300), UDPTimeout: aws.Int32(30)}
	ctReq := &ec2types.ConnectionTrackingSpecificationRequest{TcpEstablishedTimeout: aws.Int32(300), UdpTimeout: aws.Int32(30)}
	cases := []struct {
		name          string
		mutate        func(*awsv1.EC2NodeClass)
		spec          Spec
		wantNIs       []ni
		wantSGs       []string
		wantPlacement *ec2types.LaunchTemplatePlacementRequest
		wantCPU       *ec2types.LaunchTemplateCpuOptionsRequest
	}{
		{name: "defaults", wantSGs: sgs, wantPlacement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault}},
		{name: "partition group, dedicated", spec: Spec{PlacementGroupID: "pg-1", PlacementPartition: 2, Tenancy: "dedicated"}, wantSGs: sgs,
			wantPlacement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDedicated, GroupId: aws.String("pg-1"), PartitionNumber: aws.Int32(2)}},
		{name: "efa per card", spec: Spec{EFACount: 3}, mutate: func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = aws.Int32(1) },
			wantNIs: []ni{
				{NetworkCardIndex: aws.Int32(0), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("efa"), Groups: sgs, Ipv4PrefixCount: aws.Int32(1)},
				{NetworkCardIndex: aws.Int32(1), DeviceIndex: aws.Int32(1), InterfaceType: aws.String("efa"), Groups: sgs, Ipv4PrefixCount: aws.Int32(1)},
				{NetworkCardIndex: aws.Int32(2), DeviceIndex: aws.Int32(1), InterfaceType: aws.String("efa"), Groups: sgs, Ipv4PrefixCount: aws.Int32(1)},
			}, wantPlacement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault}},
		{name: "node class interfaces win over efa count", spec: Spec{EFACount: 4}, mutate: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{
				{InterfaceType: awsv1.InterfaceTypeInterface},
				{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
			}
			nc.Spec.IPPrefixCount, nc.Spec.ConnectionTracking, nc.Spec.AssociatePublicIPAddress = aws.Int32(2), ct, aws.Bool(false)
		}, wantNIs: []ni{
			{NetworkCardIndex: aws.Int32(0), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("interface"), Groups: sgs,
				Ipv4PrefixCount: aws.Int32(2), ConnectionTrackingSpecification: ctReq, AssociatePublicIpAddress: aws.Bool(false)},
			{NetworkCardIndex: aws.Int32(1), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("efa-only"), Groups: sgs},
		}, wantPlacement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault}},
		{name: "primary interface for prefixes and conntrack", mutate: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.IPPrefixCount, nc.Spec.ConnectionTracking = aws.Int32(1), ct
		}, wantNIs: []ni{{DeviceIndex: aws.Int32(0), Groups: sgs, Ipv4PrefixCount: aws.Int32(1), ConnectionTrackingSpecification: ctReq}},
			wantPlacement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault}},
		{name: "nested virtualization", mutate: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: aws.String("enabled")}
		}, wantSGs: sgs, wantPlacement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault},
			wantCPU: &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecificationEnabled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.NodeClass, s.ImageID, s.SecurityGroupIDs = nodeClass("al2023@latest", tc.mutate), "ami-1", sgs
			d := Data(s)
			opts := cmpopts.IgnoreUnexported(ni{}, ec2types.ConnectionTrackingSpecificationRequest{}, ec2types.LaunchTemplatePlacementRequest{},
				ec2types.LaunchTemplateCpuOptionsRequest{})
			if diff := cmp.Diff(tc.wantNIs, d.NetworkInterfaces, opts); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSGs, d.SecurityGroupIds); diff != "" {
				t.Errorf("security groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPlacement, d.Placement, opts); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCPU, d.CpuOptions, opts); diff != "" {
				t.Errorf("cpu options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLaunchFeaturesChangeTheName: each launch setting gives a template of its own.
func TestLaunchFeaturesChangeTheName(t *testing.T) {
	cluster := tags.Cluster{Name: "c", UID: "u"}
	base := Spec{NodeClass: nodeClass("al2023@latest", nil), ImageID: "ami-1"}
	names := map[string]string{}
	for label, s := range map[string]Spec{
		"base":      base,
		"group":     {NodeClass: base.NodeClass, ImageID: "ami-1", PlacementGroupID: "pg-1"},
		"partition": {NodeClass: base.NodeClass, ImageID: "ami-1", PlacementGroupID: "pg-1", PlacementPartition: 2},
		"dedicated": {NodeClass: base.NodeClass, ImageID: "ami-1", Tenancy: "dedicated"},
		"efa":       {NodeClass: base.NodeClass, ImageID: "ami-1", EFACount: 2},
		"prefixes":  {NodeClass: nodeClass("al2023@latest", func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = aws.Int32(1) }), ImageID: "ami-1"},
	} {
		n, err := Name(cluster, s)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := names[n]; dup {
			t.Errorf("%s and %s share the template name %s", label, other, n)
		}
		names[n] = label
	}
}
