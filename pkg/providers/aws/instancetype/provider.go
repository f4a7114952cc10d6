package instancetype

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/pricing"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
)

// DefaultTTL is how long instance type descriptions and zone offerings are used before being fetched again.
const DefaultTTL = 6 * time.Hour

// Provider lists the instance types of a region with their offerings, for a node class's kubelet settings and
// zones. Descriptions are cached for a TTL; computed shapes are cached per input; offerings are rebuilt on every
// call so availability and prices are current.
type Provider struct {
	ec2         sdk.EC2API
	prices      *pricing.Provider
	unavailable *unavailable.Cache
	clock       clock.Clock
	ttl         time.Duration
	learned     *LearnedMemory

	mu      sync.Mutex
	fetched time.Time
	infos   map[string]Info
	spotOK  map[string]bool
	zones   map[string][]string
	shapes  map[string]map[string]Shape
}

// NewProvider returns an instance type provider; ttl zero means DefaultTTL.
func NewProvider(ec2api sdk.EC2API, prices *pricing.Provider, cache *unavailable.Cache, clk clock.Clock, ttl time.Duration) *Provider {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Provider{ec2: ec2api, prices: prices, unavailable: cache, clock: clk, ttl: ttl, learned: NewLearnedMemory(clk, 0)}
}

// LearnedMemory is the memory capacity learned from registered nodes; List offers it in place of the estimate.
func (p *Provider) LearnedMemory() *LearnedMemory { return p.learned }

// Request says for which node class configuration instance types are listed.
type Request struct {
	Kubelet  Kubelet
	Settings Settings
	// Zones are the zones the node class has subnets in; offerings elsewhere are left out.
	Zones []string
	// Allow, when set, lists only the instance types it allows (a launch lists those its NodeClaim allows rather
	// than building every type's offerings).
	Allow func(name string) bool
	// AMIs identifies the node class's AMI set (AMIKey): memory learned from nodes launched from it (LearnedMemory)
	// replaces the VM_MEMORY_OVERHEAD_PERCENT estimate.
	AMIs string
	// Constraints leave out the types the node class's launch settings cannot launch.
	Constraints Constraints
}

// List returns the instance types that have at least one offering in the requested zones, sorted by name.
func (p *Provider) List(ctx context.Context, req Request) ([]*cloudprovider.InstanceType, error) {
	if len(req.Zones) == 0 {
		return nil, fmt.Errorf("no zones: the node class has no resolved subnets")
	}
	infos, spotOK, zones, shapes, err := p.snapshot(ctx, req)
	if err != nil {
		return nil, err
	}
	onDemand, err := p.prices.OnDemand(ctx)
	if err != nil {
		return nil, err
	}
	spot, err := p.prices.Spot(ctx)
	if err != nil {
		return nil, err
	}
	allowed := map[string]bool{}
	for _, z := range req.Zones {
		allowed[z] = true
	}
	names := make([]string, 0, len(infos))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	// Every type launches with default or dedicated tenancy, chosen from the NodeClaim's requirements (one map
	// shared by every type of the answer).
	launch := map[string][]string{awsv1.LabelInstanceTenancy: TenancyValues()}
	var out []*cloudprovider.InstanceType
	for _, name := range names {
		if req.Allow != nil && !req.Allow(name) {
			continue
		}
		if !req.Constraints.Allows(infos[name]) {
			continue
		}
		shape := shapes[name]
		var offerings []cloudprovider.Offering
		for _, z := range zones[name] {
			if !allowed[z] {
				continue
			}
			if price, ok := spot[name][z]; ok && spotOK[name] {
				offerings = append(offerings, p.offering(name, z, cloudprovider.CapacityTypeSpot, price))
			}
			if price, ok := onDemand[name]; ok {
				offerings = append(offerings, p.offering(name, z, cloudprovider.CapacityTypeOnDemand, price))
			}
		}
		if len(offerings) == 0 {
			continue
		}
		capacity := shape.Capacity
		if memory, ok := p.learned.Get(name, req.AMIs); ok {
			capacity = maps.Clone(shape.Capacity)
			capacity[corev1.ResourceMemory] = memory
		}
		out = append(out, &cloudprovider.InstanceType{
			Name: name, Labels: shape.Labels, Capacity: capacity, Overhead: shape.Overhead, Offerings: offerings,
			LaunchLabels: launch,
		})
	}
	return out, nil
}

// TenancyValues are the instance tenancies a launch can ask for (karpenter.k8s.aws/instance-tenancy): Karpenter's
// well-known values for the label.
func TenancyValues() []string { return []string{"dedicated", "default"} }

func (p *Provider) offering(name, zone, ct string, price float64) cloudprovider.Offering {
	return cloudprovider.Offering{
		Zone: zone, CapacityType: ct, Price: price,
		Available: !p.unavailable.IsUnavailable(unavailable.Offering{InstanceType: name, Zone: zone, CapacityType: ct}),
	}
}

// Info returns the description of one instance type, fetching descriptions if needed.
func (p *Provider) Info(ctx context.Context, name string) (Info, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return Info{}, false, err
	}
	i, ok := p.infos[name]
	return i, ok, nil
}

func (p *Provider) snapshot(ctx context.Context, req Request) (map[string]Info, map[string]bool, map[string][]string, map[string]Shape, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	keyBytes, err := json.Marshal(struct {
		K Kubelet
		S Settings
	}{req.Kubelet, req.Settings})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("encoding instance type cache key: %w", err)
	}
	key := string(keyBytes)
	shapes, ok := p.shapes[key]
	if !ok {
		shapes = map[string]Shape{}
		for name, info := range p.infos {
			s, err := Compute(info, req.Kubelet, req.Settings)
			if err != nil {
				log.FromContext(ctx).V(1).Info("skipping instance type", "instance-type", name, "error", err.Error())
				continue
			}
			shapes[name] = s
		}
		p.shapes[key] = shapes
	}
	return p.infos, p.spotOK, p.zones, shapes, nil
}

// Infos returns the description of every instance type, sorted by name (fetched again when stale).
func (p *Provider) Infos(ctx context.Context) ([]Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(p.infos))
	for _, name := range slices.Sorted(maps.Keys(p.infos)) {
		out = append(out, p.infos[name])
	}
	return out, nil
}

// refresh fetches descriptions and zone offerings when the TTL has passed. Callers hold p.mu.
func (p *Provider) refresh(ctx context.Context) error {
	if p.infos != nil && p.clock.Since(p.fetched) < p.ttl {
		return nil
	}
	infos, spotOK, err := p.describe(ctx)
	if err != nil {
		if p.infos != nil {
			log.FromContext(ctx).Error(err, "refreshing instance types failed; keeping the previous ones")
			return nil
		}
		return err
	}
	zones, err := p.offeringZones(ctx)
	if err != nil {
		if p.infos != nil {
			log.FromContext(ctx).Error(err, "refreshing instance type offerings failed; keeping the previous ones")
			return nil
		}
		return err
	}
	p.infos, p.spotOK, p.zones, p.fetched = infos, spotOK, zones, p.clock.Now()
	p.shapes = map[string]map[string]Shape{}
	return nil
}

func (p *Provider) describe(ctx context.Context) (map[string]Info, map[string]bool, error) {
	infos, spotOK := map[string]Info{}, map[string]bool{}
	pager := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, nil, sdk.Wrap(err, "describing instance types")
		}
		for _, t := range page.InstanceTypes {
			if len(t.SupportedVirtualizationTypes) > 0 && !slices.Contains(t.SupportedVirtualizationTypes, ec2types.VirtualizationTypeHvm) {
				continue
			}
			info := FromEC2(t)
			if KubeArch(info.Architectures) == "" {
				continue
			}
			infos[info.Name] = info
			spotOK[info.Name] = len(t.SupportedUsageClasses) == 0 || slices.Contains(t.SupportedUsageClasses, ec2types.UsageClassTypeSpot)
		}
	}
	if len(infos) == 0 {
		return nil, nil, fmt.Errorf("DescribeInstanceTypes returned no usable instance type")
	}
	return infos, spotOK, nil
}

func (p *Provider) offeringZones(ctx context.Context) (map[string][]string, error) {
	zones := map[string][]string{}
	pager := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, sdk.Wrap(err, "describing instance type offerings")
		}
		for _, o := range page.InstanceTypeOfferings {
			name := string(o.InstanceType)
			zones[name] = append(zones[name], aws.ToString(o.Location))
		}
	}
	for _, z := range zones {
		sort.Strings(z)
	}
	return zones, nil
}

// FromEC2 converts a DescribeInstanceTypes answer to an Info.
func FromEC2(t ec2types.InstanceTypeInfo) Info {
	info := Info{
		Name:       string(t.InstanceType),
		Hypervisor: string(t.Hypervisor),
		BareMetal:  aws.ToBool(t.BareMetal),
		// EC2 does not report branch interfaces: they come from the VPC resource controller's table.
		BranchENIs: catalog.BranchENIs(string(t.InstanceType)),
	}
	if t.VCpuInfo != nil {
		info.VCPU = int64(aws.ToInt32(t.VCpuInfo.DefaultVCpus))
	}
	if t.MemoryInfo != nil {
		info.MemoryMiB = aws.ToInt64(t.MemoryInfo.SizeInMiB)
	}
	if pi := t.ProcessorInfo; pi != nil {
		for _, a := range pi.SupportedArchitectures {
			info.Architectures = append(info.Architectures, string(a))
		}
		info.CPUManufacturer = aws.ToString(pi.Manufacturer)
		info.ClockSpeedGHz = aws.ToFloat64(pi.SustainedClockSpeedInGhz)
		info.NestedVirtualization = slices.Contains(pi.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization)
	}
	if t.PlacementGroupInfo != nil {
		info.PlacementStrategies = []string{}
		for _, s := range t.PlacementGroupInfo.SupportedStrategies {
			info.PlacementStrategies = append(info.PlacementStrategies, string(s))
		}
	}
	if t.GpuInfo != nil {
		for _, g := range t.GpuInfo.Gpus {
			d := Device{Name: aws.ToString(g.Name), Manufacturer: aws.ToString(g.Manufacturer), Count: int64(aws.ToInt32(g.Count))}
			if g.MemoryInfo != nil {
				d.MemoryMiB = int64(aws.ToInt32(g.MemoryInfo.SizeInMiB))
			}
			info.GPUs = append(info.GPUs, d)
		}
	}
	if t.NeuronInfo != nil {
		for _, n := range t.NeuronInfo.NeuronDevices {
			d := Device{Name: aws.ToString(n.Name), Manufacturer: "AWS", Count: int64(aws.ToInt32(n.Count))}
			if n.CoreInfo != nil {
				d.Cores = int64(aws.ToInt32(n.CoreInfo.Count))
			}
			if n.MemoryInfo != nil {
				d.MemoryMiB = int64(aws.ToInt32(n.MemoryInfo.SizeInMiB))
			}
			info.Accelerators = append(info.Accelerators, d)
		}
	} else if t.InferenceAcceleratorInfo != nil {
		for _, a := range t.InferenceAcceleratorInfo.Accelerators {
			info.Accelerators = append(info.Accelerators, Device{
				Name: aws.ToString(a.Name), Manufacturer: aws.ToString(a.Manufacturer), Count: int64(aws.ToInt32(a.Count)),
			})
		}
	}
	if s := t.InstanceStorageInfo; s != nil {
		info.LocalStorageGB = aws.ToInt64(s.TotalSizeInGB)
		info.LocalNVMe = s.NvmeSupport == ec2types.EphemeralNvmeSupportRequired || s.NvmeSupport == ec2types.EphemeralNvmeSupportSupported
	}
	info.NitroEnclaves = t.NitroEnclavesSupport == ec2types.NitroEnclavesSupportSupported
	if n := t.NetworkInfo; n != nil {
		info.MaxENIs = int(aws.ToInt32(n.MaximumNetworkInterfaces))
		info.IPv4PerENI = int(aws.ToInt32(n.Ipv4AddressesPerInterface))
		info.EncryptionInTransit = aws.ToBool(n.EncryptionInTransitSupported)
		if aws.ToBool(n.EfaSupported) && n.EfaInfo != nil {
			info.MaxEFAInterfaces = int(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces))
		}
		for _, c := range n.NetworkCards {
			idx := int(aws.ToInt32(c.NetworkCardIndex))
			for len(info.NetworkCards) <= idx {
				info.NetworkCards = append(info.NetworkCards, 0)
			}
			info.NetworkCards[idx] = int(aws.ToInt32(c.MaximumNetworkInterfaces))
		}
		var gbps float64
		for _, c := range n.NetworkCards {
			gbps += aws.ToFloat64(c.BaselineBandwidthInGbps)
		}
		info.NetworkBandwidthMbps = int64(math.Round(gbps * 1000))
	}
	if t.EbsInfo != nil && t.EbsInfo.EbsOptimizedInfo != nil {
		info.EBSBandwidthMbps = int64(aws.ToInt32(t.EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps))
	}
	return info
}
