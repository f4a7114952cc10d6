package aws

import (
	"context"
	"fmt"
	"slices"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/kubeletcel"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
	"github.com/dovetail/dovetail/pkg/providers/aws/launchtemplate"
	"github.com/dovetail/dovetail/pkg/providers/aws/pricing"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
	"github.com/dovetail/dovetail/pkg/providers/aws/zonalshift"
	"github.com/dovetail/dovetail/pkg/settings"
)

// ProviderName is what Name returns.
const ProviderName = "aws"

// Options are what NewCloudProvider needs.
type Options struct {
	// Settings are the operator's settings: ClusterName (required), ClusterEndpoint, ClusterCABundle,
	// VMMemoryOverheadPercent, ReservedENIs and IsolatedVPC are read.
	Settings *settings.Settings
	// ClusterUID identifies this cluster uniquely (the kube-system namespace UID). Required: every instance,
	// launch template and instance profile is tagged with it, and only resources carrying it are acted on.
	ClusterUID string
	// KubeClient reads EC2NodeClasses.
	KubeClient client.Reader
	// Clock drives every cache TTL (default: the real clock).
	Clock clock.Clock
	// AWSConfig is the SDK configuration; nil loads it with config.LoadDefaultConfig (AWS_REGION,
	// AWS_ENDPOINT_URL*, credentials chain).
	AWSConfig *awssdk.Config
	// KubernetesVersion (e.g. "1.34") fixes the version that selects AMI alias parameters; empty reads it every
	// Settings.KubernetesVersionRefreshInterval (VersionRefresh when zero) from ServerVersion
	// (Settings.EKSControlPlane false) or EKS DescribeCluster (true, or no ServerVersion).
	KubernetesVersion string
	// ServerVersion returns the API server's Kubernetes version as major.minor (discovery).
	ServerVersion func(context.Context) (string, error)
	// KubeDNS returns the ClusterIP of the kube-system/kube-dns Service, the nodes' cluster DNS address; nil, an
	// error or an empty answer falls back to the tenth address of the service CIDR.
	KubeDNS func(context.Context) (string, error)
	// ServiceCIDR is the cluster's service CIDR for the node bootstrap; empty asks EKS, then uses 10.100.0.0/16.
	ServiceCIDR string
	// OnThrottle, when set, is called with the service and operation of every AWS call attempt answered with a
	// throttling error (the operator counts them in dovetail_cloudprovider_throttled_calls_total).
	OnThrottle func(service, operation string)
	// OnCall, when set, is called as every AWS operation returns, with its attempts (the operator records the
	// aws_sdk_go_request_* metrics from it).
	OnCall func(sdk.Call)
	// OnLaunchFailure, when set, is called for every error of a CreateFleet answer, with the launch's capacity
	// type, the reason (Karpenter's launch-failure reasons), the offering's zone and zone ID.
	OnLaunchFailure func(capacityType, reason, zone, zoneID string)
	// OnTerminationFailure, when set, is called for every TerminateInstances call that fails, with the zone and
	// zone ID of the NodeClaim's instance.
	OnTerminationFailure func(zone, zoneID string)
	// OnUserData, when set, is called as a launch template is created, with its EC2NodeClass and the size in
	// bytes of its user data (before base64); OnNodeClassTemplatesDeleted once an EC2NodeClass's launch templates
	// are deleted (the node class is going).
	OnUserData                  func(nodeClass string, bytes int)
	OnNodeClassTemplatesDeleted func(nodeClass string)
	// OnBatch, when set, is called as each batching window of the provider closes, with the batcher's name
	// (create_fleet), the requests it collected and how long it was open.
	OnBatch func(batcher string, size int, open time.Duration)
	// LaunchBatch is the window in which identical launches are merged into one CreateFleet call (nil:
	// instance.DefaultBatchWindow). Its clock is its own (default: the real clock), not Clock.
	LaunchBatch *instance.BatchWindow
	// LaunchNotices, when set, are the launches the provisioner announced: the launch window waits for those
	// still on their way (unless LaunchBatch sets its own Waiting), and Create notes each arrival.
	LaunchNotices *cloudprovider.LaunchNotices
}

// CloudProvider is the AWS implementation of cloudprovider.CloudProvider. It also resolves EC2NodeClasses for
// the node class controller (NodeClassResolver) and tags instances for the lifecycle controller (TagInstance).
type CloudProvider struct {
	kube          client.Reader
	settings      *settings.Settings
	cluster       tags.Cluster
	clients       *sdk.Clients
	clock         clock.Clock
	unavailable   *unavailable.Cache
	instanceTypes *instancetype.Provider
	instances     *instance.Provider
	// drifted remembers the instance descriptions IsDrifted used (DriftInstanceTTL).
	drifted *driftInstances
	// userData remembers rendered user data by bootstrap content.
	userData    *userDataMemo
	templates   *launchtemplate.Provider
	resolver    *resolve.Resolver
	clusterInfo *clusterInfoSource
	// reservations counts the room left in capacity reservations between DescribeCapacityReservations calls.
	reservations *capacityreservation.Tracker
	notices      *cloudprovider.LaunchNotices
	// overlay, when set, rewrites the instance types Create launches from as the cluster's NodeOverlays say.
	overlay cloudprovider.InstanceTypeOverlay
	// onTerminationFailure is Options.OnTerminationFailure.
	onTerminationFailure func(zone, zoneID string)
	// zonalShifts follows the cluster's ARC zonal shifts; nil unless EnableZonalShift succeeded.
	zonalShifts *zonalshift.Tracker
	// cel evaluates the kubelet CEL expressions of node classes; nil while the NodeClassCEL gate is off.
	cel *kubeletcel.Env
	// placementGroups remembers the placement groups node classes select (placementgroup.go).
	placementGroups *placementGroupCache
}

// SetInstanceTypeOverlay makes Create launch from overlaid instance types: NodeOverlay prices order the
// on-demand choices (prioritized allocation) and NodeOverlay capacity appears in the NodeClaim's capacity.
// Call it before the provider is used.
func (p *CloudProvider) SetInstanceTypeOverlay(o cloudprovider.InstanceTypeOverlay) { p.overlay = o }

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// NewCloudProvider builds the AWS cloud provider. It makes no AWS call: cluster details (endpoint, CA,
// Kubernetes version) are fetched on first use.
func NewCloudProvider(ctx context.Context, opts Options) (*CloudProvider, error) {
	if opts.Settings == nil || opts.Settings.ClusterName == "" {
		return nil, fmt.Errorf("aws cloud provider: settings with a cluster name are required")
	}
	if opts.ClusterUID == "" {
		return nil, fmt.Errorf("aws cloud provider: a cluster UID is required (the kube-system namespace UID)")
	}
	if opts.KubeClient == nil {
		return nil, fmt.Errorf("aws cloud provider: a Kubernetes client is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	var cfg awssdk.Config
	if opts.AWSConfig != nil {
		cfg = *opts.AWSConfig
	} else {
		loaded, err := sdk.LoadConfig(ctx, "")
		if err != nil {
			return nil, err
		}
		cfg = loaded
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("aws cloud provider: no AWS region: set AWS_REGION")
	}
	sdk.CountThrottles(&cfg, opts.OnThrottle)
	sdk.ObserveCalls(&cfg, opts.OnCall)
	p := newWithClients(opts, sdk.NewClients(cfg))
	if opts.Settings.AWSFeatureEnabled(settings.AWSFeatureNodeClassCEL) {
		env, err := kubeletcel.New()
		if err != nil {
			return nil, fmt.Errorf("aws cloud provider: %w", err)
		}
		p.cel = env
	}
	return p, nil
}

func newWithClients(opts Options, clients *sdk.Clients) *CloudProvider {
	window := instance.DefaultBatchWindow
	if opts.LaunchBatch != nil {
		window = *opts.LaunchBatch
	}
	if window.Observed == nil && opts.OnBatch != nil {
		window.Observed = func(size int, open time.Duration) { opts.OnBatch("create_fleet", size, open) }
	}
	if window.Waiting == nil && opts.LaunchNotices != nil {
		window.Waiting = opts.LaunchNotices.Waiting
	}
	cluster := tags.Cluster{Name: opts.Settings.ClusterName, UID: opts.ClusterUID}
	cache := unavailable.New(opts.Clock, unavailable.DefaultTTL)
	instances := instance.NewProvider(clients.EC2, cluster, cache, opts.Clock, window)
	templates := launchtemplate.NewProvider(clients.EC2, cluster, opts.Clock)
	templates.OnUserData, templates.OnDeleted = opts.OnUserData, opts.OnNodeClassTemplatesDeleted
	if f := opts.OnLaunchFailure; f != nil {
		instances.OnLaunchFailure = func(l instance.LaunchFailure) { f(l.CapacityType, l.Reason, l.Zone, l.ZoneID) }
	}
	prices := pricing.NewProvider(clients.EC2, clients.Pricing, clients.Region, opts.Settings.IsolatedVPC, opts.Clock, 0)
	return &CloudProvider{
		placementGroups:      newPlacementGroupCache(),
		kube:                 opts.KubeClient,
		settings:             opts.Settings,
		cluster:              cluster,
		clients:              clients,
		clock:                opts.Clock,
		unavailable:          cache,
		instanceTypes:        instancetype.NewProvider(clients.EC2, prices, cache, opts.Clock, 0),
		instances:            instances,
		onTerminationFailure: opts.OnTerminationFailure,
		drifted:              newDriftInstances(opts.Clock),
		userData:             newUserDataMemo(),
		templates:            templates,
		resolver:             resolve.New(clients, cluster, opts.Clock),
		reservations:         capacityreservation.NewTracker(),
		notices:              opts.LaunchNotices,
		clusterInfo: &clusterInfoSource{
			eks: clients.EKS, name: opts.Settings.ClusterName,
			endpoint: opts.Settings.ClusterEndpoint, caBundle: opts.Settings.ClusterCABundle,
			version: opts.KubernetesVersion, serviceCIDR: opts.ServiceCIDR,
			eksControlPlane: opts.Settings.EKSControlPlane, serverVersion: opts.ServerVersion, kubeDNS: opts.KubeDNS,
			versionRefresh: opts.Settings.KubernetesVersionRefreshInterval, clock: opts.Clock,
		},
	}
}

// Name returns "aws".
func (p *CloudProvider) Name() string { return ProviderName }

// Region returns the AWS region the provider works in.
func (p *CloudProvider) Region() string { return p.clients.Region }

// UnavailableOfferings returns the offerings EC2 refused recently that launches skip now.
func (p *CloudProvider) UnavailableOfferings() []cloudprovider.UnavailableOffering {
	entries := p.unavailable.Entries()
	out := make([]cloudprovider.UnavailableOffering, 0, len(entries))
	for _, e := range entries {
		out = append(out, cloudprovider.UnavailableOffering{InstanceType: e.InstanceType, Zone: e.Zone,
			CapacityType: e.CapacityType, Reason: e.Reason, Until: e.Until.UTC()})
	}
	return out
}

var _ cloudprovider.UnavailableOfferingsLister = (*CloudProvider)(nil)

// MarkOfferingUnavailable makes an offering unavailable for a while, for example after a spot interruption.
func (p *CloudProvider) MarkOfferingUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string) {
	p.unavailable.MarkUnavailable(ctx, reason, unavailable.Offering{InstanceType: instanceType, Zone: zone, CapacityType: capacityType})
}

// nodeClass reads the EC2NodeClass a NodePool or NodeClaim refers to.
func (p *CloudProvider) nodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("no nodeClassRef"))
	}
	if ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeClassRef %s/%s is not a %s EC2NodeClass", ref.Group, ref.Kind, awsv1.Group))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q not found", ref.Name))
		}
		return nil, fmt.Errorf("reading EC2NodeClass %q: %w", ref.Name, err)
	}
	return nc, nil
}

// GetInstanceTypes returns the instance types the NodePool's EC2NodeClass can launch, with offerings in the
// zones of its subnets.
func (p *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	nc, err := p.nodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	return p.instanceTypesFor(ctx, nc)
}

func (p *CloudProvider) instanceTypesFor(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	return p.instanceTypesAllowed(ctx, nc, nil)
}

// instanceTypesAllowed is instanceTypesFor restricted to the instance type names allow accepts (nil: all).
func (p *CloudProvider) instanceTypesAllowed(ctx context.Context, nc *awsv1.EC2NodeClass, allow func(string) bool) ([]*cloudprovider.InstanceType, error) {
	if len(nc.Status.Subnets) == 0 {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q has no resolved subnets", nc.Name))
	}
	seen := map[string]bool{}
	var zones []string
	for _, s := range nc.Status.Subnets {
		if !seen[s.Zone] {
			seen[s.Zone] = true
			zones = append(zones, s.Zone)
		}
	}
	pg := p.placementGroup(ctx, nc)
	its, err := p.instanceTypes.List(ctx, instancetype.Request{Kubelet: p.kubeletOf(nc), Settings: p.shapeSettings(nc), Zones: zones, Allow: allow,
		AMIs: AMIKey(nc.Status.AMIs), Constraints: launchConstraints(nc, pg)})
	if err != nil {
		return nil, err
	}
	its = withPlacementGroupLabel(its, pg)
	if nc.EnclaveEnabled() {
		// Nitro Enclaves launch only on the types that support them (karpenter.k8s.aws/nitro-sandbox: "true").
		its = slices.DeleteFunc(slices.Clone(its), func(it *cloudprovider.InstanceType) bool {
			return it.Labels[awsv1.LabelNitroSandbox] != "true"
		})
	}
	its = p.withReservedOfferings(ctx, nc, its, zones)
	// Offerings in a zone traffic is shifted away from (ENABLE_ZONAL_SHIFT) are unavailable until the shift ends.
	return withoutShiftedZones(its, p.shiftedZoneNames(ctx, nc)), nil
}

func (p *CloudProvider) shapeSettings(nc *awsv1.EC2NodeClass) instancetype.Settings {
	s := instancetype.Settings{
		VMMemoryOverheadPercent: p.settings.VMMemoryOverheadPercent,
		ReservedENIs:            p.settings.ReservedENIs,
		EphemeralStorage:        launchtemplate.EphemeralStorage(nc),
		InstanceStoreRAID0:      instanceStoreRAID0(nc),
		NetworkInterfaces:       nc.Spec.NetworkInterfaces,
	}
	if awsv1.IsWindows(nc.AMIFamily()) {
		s.OS = karpv1.OSWindows
		s.WindowsBuild = awsv1.WindowsBuild(nc.AMIFamily())
	}
	return s
}

func (p *CloudProvider) kubeletOf(nc *awsv1.EC2NodeClass) instancetype.Kubelet {
	return instancetype.KubeletOf(nc.Spec.Kubelet, p.cel)
}
