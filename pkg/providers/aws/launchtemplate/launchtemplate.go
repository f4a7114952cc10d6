package launchtemplate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// NamePrefix starts the name of every launch template Dovetail creates.
const NamePrefix = "dovetail.sh/"

// cacheTTL is how long a launch template known to exist is used without asking EC2 again.
const cacheTTL = 10 * time.Minute

// Spec is everything a launch template holds. Equal specs give the same template name.
type Spec struct {
	NodeClass        *awsv1.EC2NodeClass
	ImageID          string
	UserData         string
	SecurityGroupIDs []string
	InstanceProfile  string
	// CapacityReservationID targets the instances at one capacity reservation; CapacityBlock says it is a
	// Capacity Block (launched with the capacity-block market type).
	CapacityReservationID string
	CapacityBlock         bool
	// IPv6 is an IPv6 cluster's template: the primary network interface gets a primary IPv6 address.
	IPv6 bool
	// PlacementGroupID places the instances in a placement group, in partition PlacementPartition when non-zero.
	PlacementGroupID   string
	PlacementPartition int32
	// Tenancy is dedicated for single-tenant hardware; empty or default for shared.
	Tenancy string
	// EFACount, when the node class sets no spec.networkInterfaces, gives the instances that many EFA interfaces,
	// one per network card (pods on them request vpc.amazonaws.com/efa).
	EFACount int
}

// Name returns the launch template name for a spec: a hash of its content and the cluster identity.
func Name(cluster tags.Cluster, s Spec) (string, error) {
	nc := s.NodeClass
	key, err := json.Marshal(struct {
		UID, NodeClass, ImageID, UserData, Profile string
		SGs                                        []string
		BDM                                        []*awsv1.BlockDeviceMapping
		Metadata                                   *awsv1.MetadataOptions
		Monitoring, PublicIP                       *bool
		Reservation                                string                    `json:",omitempty"`
		Block                                      bool                      `json:",omitempty"`
		Enclave                                    bool                      `json:",omitempty"`
		Placement                                  string                    `json:",omitempty"`
		Partition                                  int32                     `json:",omitempty"`
		Tenancy                                    string                    `json:",omitempty"`
		EFA                                        int                       `json:",omitempty"`
		Interfaces                                 []awsv1.NetworkInterface  `json:",omitempty"`
		CPU                                        *awsv1.CPUOptions         `json:",omitempty"`
		ConnTrack                                  *awsv1.ConnectionTracking `json:",omitempty"`
		Prefixes                                   *int32                    `json:",omitempty"`
		IPv6                                       bool                      `json:",omitempty"`
	}{cluster.UID, nc.Name, s.ImageID, s.UserData, s.InstanceProfile, s.SecurityGroupIDs,
		nc.Spec.BlockDeviceMappings, nc.Spec.MetadataOptions, nc.Spec.DetailedMonitoring, nc.Spec.AssociatePublicIPAddress,
		s.CapacityReservationID, s.CapacityBlock, nc.EnclaveEnabled(), s.PlacementGroupID, s.PlacementPartition, s.Tenancy,
		s.EFACount, nc.Spec.NetworkInterfaces, nc.Spec.CPUOptions, nc.Spec.ConnectionTracking, nc.Spec.IPPrefixCount, s.IPv6})
	if err != nil {
		return "", fmt.Errorf("hashing launch template spec: %w", err)
	}
	sum := sha256.Sum256(key)
	return NamePrefix + hex.EncodeToString(sum[:])[:32], nil
}

// DefaultBlockDeviceMappings returns the volumes of an AMI family when the node class sets none.
func DefaultBlockDeviceMappings(family string) []*awsv1.BlockDeviceMapping {
	vol := func(device, size string, root bool) *awsv1.BlockDeviceMapping {
		q := resource.MustParse(size)
		return &awsv1.BlockDeviceMapping{
			DeviceName: aws.String(device), RootVolume: root,
			EBS: &awsv1.BlockDevice{VolumeSize: &q, VolumeType: aws.String("gp3"), Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)},
		}
	}
	switch family {
	case awsv1.AMIFamilyBottlerocket:
		return []*awsv1.BlockDeviceMapping{vol("/dev/xvda", "4Gi", false), vol("/dev/xvdb", "20Gi", true)}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return []*awsv1.BlockDeviceMapping{vol("/dev/sda1", "50Gi", true)}
	}
	return []*awsv1.BlockDeviceMapping{vol("/dev/xvda", "20Gi", true)}
}

// BlockDeviceMappings returns the node class's volumes, or the family defaults.
func BlockDeviceMappings(nc *awsv1.EC2NodeClass) []*awsv1.BlockDeviceMapping {
	if len(nc.Spec.BlockDeviceMappings) > 0 {
		return nc.Spec.BlockDeviceMappings
	}
	return DefaultBlockDeviceMappings(nc.AMIFamily())
}

// EphemeralStorage returns the size of the volume pods' ephemeral storage lives on: the mapping marked
// rootVolume, else the family's default data volume; zero when unknown (callers use 20Gi).
func EphemeralStorage(nc *awsv1.EC2NodeClass) resource.Quantity {
	bdms := BlockDeviceMappings(nc)
	for _, b := range bdms {
		if b.RootVolume && b.EBS != nil && b.EBS.VolumeSize != nil {
			return b.EBS.VolumeSize.DeepCopy()
		}
	}
	want := "/dev/xvda"
	if nc.AMIFamily() == awsv1.AMIFamilyBottlerocket {
		want = "/dev/xvdb"
	}
	for _, b := range bdms {
		if aws.ToString(b.DeviceName) == want && b.EBS != nil && b.EBS.VolumeSize != nil {
			return b.EBS.VolumeSize.DeepCopy()
		}
	}
	return resource.Quantity{}
}

// Data builds the launch template data for a spec.
func Data(s Spec) *ec2types.RequestLaunchTemplateData {
	nc := s.NodeClass
	d := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(s.ImageID),
		UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(s.UserData))),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(s.InstanceProfile)},
		MetadataOptions:    metadataOptions(nc.Spec.MetadataOptions, s.IPv6),
		Monitoring:         &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(aws.ToBool(nc.Spec.DetailedMonitoring))},
	}
	if nc.EnclaveEnabled() {
		d.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(true)}
	}
	if s.CapacityReservationID != "" {
		d.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(s.CapacityReservationID)},
		}
		if s.CapacityBlock {
			d.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	}
	for _, b := range BlockDeviceMappings(nc) {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID,
				SnapshotId: e.SnapshotID, VolumeType: ec2types.VolumeType(aws.ToString(e.VolumeType)),
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			if e.VolumeSize != nil {
				gib := (e.VolumeSize.Value() + (1<<30 - 1)) >> 30
				m.Ebs.VolumeSize = aws.Int32(int32(gib))
			}
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, m)
	}
	d.NetworkInterfaces = networkInterfaces(s)
	if len(d.NetworkInterfaces) == 0 {
		d.SecurityGroupIds = s.SecurityGroupIDs
	}
	d.Placement = &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.Tenancy(tenancyOf(s))}
	if s.PlacementGroupID != "" {
		d.Placement.GroupId = aws.String(s.PlacementGroupID)
		if s.PlacementPartition > 0 {
			d.Placement.PartitionNumber = aws.Int32(s.PlacementPartition)
		}
	}
	if o := nc.Spec.CPUOptions; o != nil && o.NestedVirtualization != nil {
		d.CpuOptions = &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*o.NestedVirtualization)}
	}
	return d
}

func tenancyOf(s Spec) string {
	if s.Tenancy == "" {
		return string(ec2types.TenancyDefault)
	}
	return s.Tenancy
}

// networkInterfaces are the launch template's interfaces: spec.networkInterfaces as given; else EFACount EFA
// interfaces, one per network card; else one primary interface when the template must set something on it (a
// public address choice, IP prefixes, connection tracking or an IPv6 cluster's address); else none, and the instance gets EC2's default.
// EFA-only interfaces carry no IP settings.
func networkInterfaces(s Spec) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	nc := s.NodeClass
	conntrack := connectionTracking(nc.Spec.ConnectionTracking)
	ip := func(ni *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) {
		ni.AssociatePublicIpAddress = nc.Spec.AssociatePublicIPAddress
		ni.ConnectionTrackingSpecification = conntrack
		if !s.IPv6 {
			ni.Ipv4PrefixCount = nc.Spec.IPPrefixCount
			return
		}
		// As Karpenter does in an IPv6 cluster: every interface carrying IP traffic gets one IPv6 address, its
		// primary one (on the primary interface, the node's address for the kubelet and the VPC CNI), and
		// ipPrefixCount asks for IPv6 /80 prefixes instead of IPv4 /28 ones. Nothing asks for an IPv4 address:
		// in an IPv6-only subnet the instance has none.
		ni.PrimaryIpv6 = aws.Bool(true)
		ni.Ipv6AddressCount = aws.Int32(1)
		ni.Ipv6PrefixCount = nc.Spec.IPPrefixCount
	}
	var out []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
	switch {
	case len(nc.Spec.NetworkInterfaces) > 0:
		for _, ni := range nc.Spec.NetworkInterfaces {
			r := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex),
				InterfaceType: aws.String(ni.InterfaceType), Groups: s.SecurityGroupIDs,
			}
			if ni.InterfaceType != awsv1.InterfaceTypeEFAOnly {
				ip(&r)
			}
			out = append(out, r)
		}
	case s.EFACount > 0:
		for i := 0; i < s.EFACount; i++ {
			// The first EFA is the primary interface; the others sit at device index 1 of their cards.
			dev := int32(1)
			if i == 0 {
				dev = 0
			}
			r := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				NetworkCardIndex: aws.Int32(int32(i)), DeviceIndex: aws.Int32(dev), InterfaceType: aws.String("efa"),
				Groups: s.SecurityGroupIDs,
			}
			ip(&r)
			out = append(out, r)
		}
	case nc.Spec.AssociatePublicIPAddress != nil || nc.Spec.IPPrefixCount != nil || conntrack != nil || s.IPv6:
		r := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{DeviceIndex: aws.Int32(0), Groups: s.SecurityGroupIDs}
		ip(&r)
		out = append(out, r)
	}
	return out
}

func connectionTracking(ct *awsv1.ConnectionTracking) *ec2types.ConnectionTrackingSpecificationRequest {
	if ct == nil || (ct.TCPEstablishedTimeout == nil && ct.UDPStreamTimeout == nil && ct.UDPTimeout == nil) {
		return nil
	}
	return &ec2types.ConnectionTrackingSpecificationRequest{
		TcpEstablishedTimeout: ct.TCPEstablishedTimeout, UdpStreamTimeout: ct.UDPStreamTimeout, UdpTimeout: ct.UDPTimeout,
	}
}

// metadataOptions are the node class's instance metadata options; without any (the API server defaults them, so
// only for a class built in code) the IPv6 endpoint is on in an IPv6 cluster, as in Karpenter.
func metadataOptions(m *awsv1.MetadataOptions, ipv6 bool) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
		HttpPutResponseHopLimit: aws.Int32(1),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
	}
	if m == nil {
		if ipv6 {
			out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Enabled
		}
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.LaunchTemplateInstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*m.HTTPProtocolIPv6)
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HttpPutResponseHopLimit = aws.Int32(int32(*m.HTTPPutResponseHopLimit))
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.LaunchTemplateHttpTokensState(*m.HTTPTokens)
	}
	return out
}

// Provider creates launch templates on demand, remembers which exist, and deletes a node class's templates.
type Provider struct {
	ec2     sdk.EC2API
	cluster tags.Cluster
	clock   clock.Clock

	mu    sync.Mutex
	known map[string]time.Time

	// OnUserData, when set, is called as a launch template is created, with its node class and the size in bytes
	// of its user data (before base64); OnDeleted after DeleteAll deleted a node class's templates. Set them
	// before first use.
	OnUserData func(nodeClass string, bytes int)
	OnDeleted  func(nodeClass string)
}

// NewProvider returns a launch template provider.
func NewProvider(ec2api sdk.EC2API, cluster tags.Cluster, clk clock.Clock) *Provider {
	return &Provider{ec2: ec2api, cluster: cluster, clock: clk, known: map[string]time.Time{}}
}

// Ensure makes sure the launch template for spec exists and returns its name.
func (p *Provider) Ensure(ctx context.Context, s Spec) (string, error) {
	name, err := Name(p.cluster, s)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	at, ok := p.known[name]
	p.mu.Unlock()
	if ok && p.clock.Since(at) < cacheTTL {
		return name, nil
	}
	_, err = p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch {
	case err == nil:
	case sdk.IsNotFound(err):
		if err := p.create(ctx, name, s); err != nil {
			return "", err
		}
	default:
		return "", sdk.Wrap(err, "describing launch template %s", name)
	}
	p.mu.Lock()
	p.known[name] = p.clock.Now()
	p.mu.Unlock()
	return name, nil
}

func (p *Provider) create(ctx context.Context, name string, s Spec) error {
	t := p.cluster.ForNodeClassResource(s.NodeClass.Name, s.NodeClass.Spec.Tags)
	_, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: Data(s),
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags.EC2(t)}},
	})
	if err != nil {
		if sdk.ErrorCode(err) == "InvalidLaunchTemplateName.AlreadyExistsException" {
			return nil
		}
		return sdk.Wrap(err, "creating launch template %s", name)
	}
	log.FromContext(ctx).Info("created launch template", "launch-template", name, "ec2nodeclass", s.NodeClass.Name, "image", s.ImageID)
	if p.OnUserData != nil {
		p.OnUserData(s.NodeClass.Name, len(s.UserData))
	}
	return nil
}

// Invalidate forgets that a launch template exists, so the next Ensure checks and recreates it.
func (p *Provider) Invalidate(names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range names {
		delete(p.known, n)
	}
}

// InvalidateAll forgets every launch template.
func (p *Provider) InvalidateAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.known = map[string]time.Time{}
}

// DeleteAll deletes every launch template this cluster made for the node class and returns how many.
func (p *Provider) DeleteAll(ctx context.Context, nodeClass string) (int, error) {
	in := &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagNodeClass), Values: []string{nodeClass}},
		{Name: aws.String("tag:" + tags.ClusterUID), Values: []string{p.cluster.UID}},
	}}
	var names []string
	pager := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, sdk.Wrap(err, "listing launch templates of %s", nodeClass)
		}
		for _, lt := range page.LaunchTemplates {
			// Filters are checked again here: the ownership decision must not depend on the server honouring them.
			t := tags.FromEC2(lt.Tags)
			if p.cluster.Owner(t) != tags.Owned || t[awsv1.TagNodeClass] != nodeClass {
				continue
			}
			names = append(names, aws.ToString(lt.LaunchTemplateName))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(n)})
		if err != nil && !sdk.IsNotFound(err) {
			return 0, sdk.Wrap(err, "deleting launch template %s", n)
		}
		log.FromContext(ctx).Info("deleted launch template", "launch-template", n, "ec2nodeclass", nodeClass)
	}
	p.Invalidate(names...)
	if p.OnDeleted != nil {
		p.OnDeleted(nodeClass)
	}
	return len(names), nil
}
