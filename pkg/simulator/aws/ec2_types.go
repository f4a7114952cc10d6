package awssim

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// regionTypes returns the catalog types offered in at least one simulated zone.
func (s *Simulator) regionTypes() []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for _, t := range s.cat.TypesIn(s.opts.Region) {
		for _, z := range s.zones {
			if t.OfferedIn(s.opts.Region, z.Name) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

func instanceTypeValues(t *catalog.InstanceType, spot bool) valuesFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-type":
			return []string{t.Name}, true
		case "supported-virtualization-type":
			return t.VirtualizationTypes, true
		case "processor-info.supported-architecture":
			return t.Architectures, true
		case "current-generation":
			return []string{boolStr(t.CurrentGeneration)}, true
		case "bare-metal":
			return []string{boolStr(t.BareMetal)}, true
		case "hypervisor":
			return []string{t.Hypervisor}, true
		case "burstable-performance-supported":
			return []string{boolStr(t.Burstable)}, true
		case "vcpu-info.default-vcpus":
			return []string{strconv.Itoa(t.VCPU)}, true
		case "memory-info.size-in-mib":
			return []string{strconv.FormatInt(t.MemoryMiB, 10)}, true
		case "processor-info.manufacturer":
			return []string{t.CPUManufacturer}, true
		case "instance-storage-supported":
			return []string{boolStr(t.LocalStorageGB > 0)}, true
		case "supported-usage-class":
			if spot {
				return []string{"on-demand", "spot"}, true
			}
			return []string{"on-demand"}, true
		case "network-info.maximum-network-interfaces":
			return []string{strconv.Itoa(t.MaxENIs)}, true
		case "network-info.ipv4-addresses-per-interface":
			return []string{strconv.Itoa(t.IPv4PerENI)}, true
		}
		return nil, false
	}
}

func (s *Simulator) describeInstanceTypes(_ *http.Request, _ *account, p params) ([]*el, *apiError) {
	want := map[string]bool{}
	for _, n := range p.strings("InstanceType") {
		want[n] = true
	}
	all := s.regionTypes()
	if len(want) > 0 {
		found := map[string]bool{}
		for _, t := range all {
			found[t.Name] = true
		}
		for n := range want {
			if !found[n] {
				return nil, errBadRequest("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", n)
			}
		}
	}
	var matched []*catalog.InstanceType
	for _, t := range all {
		if len(want) > 0 && !want[t.Name] {
			continue
		}
		_, spot := t.Offerings[s.opts.Region]
		spot = spot && len(t.Offerings[s.opts.Region].SpotUSD) > 0
		ok, err := matchFilters(p.filters(), instanceTypeValues(t, spot), nil)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, t)
		}
	}
	pageItems, next, err := page(matched, p, 100, 100)
	if err != nil {
		return nil, err
	}
	items := make([]*el, 0, len(pageItems))
	for _, t := range pageItems {
		items = append(items, s.instanceTypeXML(t))
	}
	return []*el{List("instanceTypeSet", "item", items), next}, nil
}

func (s *Simulator) instanceTypeXML(t *catalog.InstanceType) *el {
	usage := []string{"on-demand"}
	if o, ok := t.Offerings[s.opts.Region]; ok && len(o.SpotUSD) > 0 {
		usage = append(usage, "spot")
	}
	proc := E("processorInfo", StrList("supportedArchitectures", "item", t.Architectures), TOpt("manufacturer", t.CPUManufacturer))
	if t.ClockSpeedGHz > 0 {
		proc.kids = append(proc.kids, F("sustainedClockSpeedInGhz", t.ClockSpeedGHz))
	}
	var gpu *el
	if len(t.GPUs) > 0 {
		var gpus []*el
		total := int64(0)
		for _, g := range t.GPUs {
			gpus = append(gpus, E("item", T("name", g.Name), T("manufacturer", g.Manufacturer), I("count", int64(g.Count)),
				E("memoryInfo", I("sizeInMiB", g.MemoryMiB))))
			total += g.MemoryMiB * int64(g.Count)
		}
		gpu = E("gpuInfo", List("gpus", "item", gpus), I("totalGpuMemoryInMiB", total))
	}
	var neuron *el
	if len(t.Accelerators) > 0 {
		var devs []*el
		total := int64(0)
		for _, a := range t.Accelerators {
			dev := E("item", T("name", a.Name), I("count", int64(a.Count)))
			if cores, version, ok := neuronCores(a.Name); ok {
				dev.kids = append(dev.kids, E("coreInfo", I("count", cores), I("version", version)))
			}
			dev.kids = append(dev.kids, E("memoryInfo", I("sizeInMiB", a.MemoryMiB)))
			devs = append(devs, dev)
			total += a.MemoryMiB * int64(a.Count)
		}
		neuron = E("neuronInfo", List("neuronDevices", "item", devs), I("totalNeuronDeviceMemoryInMiB", total))
	}
	var storage *el
	if t.LocalStorageGB > 0 {
		nvme := "unsupported"
		diskType := "hdd"
		if t.LocalNVMe {
			nvme, diskType = "required", "ssd"
		}
		storage = E("instanceStorageInfo", I("totalSizeInGB", int64(t.LocalStorageGB)), T("nvmeSupport", nvme),
			List("disks", "item", []*el{E("item", I("sizeInGB", int64(t.LocalStorageGB)), I("count", 1), T("type", diskType))}))
	}
	netPerf := t.NetworkPerformance
	cards := t.NetworkCards()
	cardEls := make([]*el, 0, len(cards))
	for i, n := range cards {
		bw := float64(t.NetworkBandwidthMbps) / 1000 / float64(len(cards))
		cardEls = append(cardEls, E("item", I("networkCardIndex", int64(i)), T("networkPerformance", netPerf),
			I("maximumNetworkInterfaces", int64(n)), F("baselineBandwidthInGbps", bw), F("peakBandwidthInGbps", bw)))
	}
	efa := t.EFAInterfaces()
	var efaInfo *el
	if efa > 0 {
		efaInfo = E("efaInfo", I("maximumEfaInterfaces", int64(efa)))
	}
	net := E("networkInfo", T("networkPerformance", netPerf), I("maximumNetworkInterfaces", int64(t.MaxENIs)),
		I("maximumNetworkCards", int64(len(cards))), I("defaultNetworkCardIndex", 0),
		List("networkCards", "item", cardEls),
		I("ipv4AddressesPerInterface", int64(t.IPv4PerENI)), I("ipv6AddressesPerInterface", int64(t.IPv4PerENI)),
		B("ipv6Supported", true), T("enaSupport", "required"), B("efaSupported", efa > 0), efaInfo,
		B("encryptionInTransitSupported", t.Hypervisor == "nitro" && t.Generation >= 5))
	if t.NestedVirtualization() {
		proc.kids = append(proc.kids, StrList("supportedFeatures", "item", []string{"nested-virtualization"}))
	}
	placement := E("placementGroupInfo", StrList("supportedStrategies", "item", t.PlacementStrategies()))
	hyper := TOpt("hypervisor", t.Hypervisor)
	enclaves := "unsupported"
	if t.NitroEnclaves() {
		enclaves = "supported"
	}
	return E("item",
		T("instanceType", t.Name), B("currentGeneration", t.CurrentGeneration), B("freeTierEligible", false),
		StrList("supportedUsageClasses", "item", usage), StrList("supportedRootDeviceTypes", "item", []string{"ebs"}),
		StrList("supportedVirtualizationTypes", "item", t.VirtualizationTypes), B("bareMetal", t.BareMetal), hyper,
		T("nitroEnclavesSupport", enclaves),
		proc,
		E("vCpuInfo", I("defaultVCpus", int64(t.VCPU))),
		E("memoryInfo", I("sizeInMiB", t.MemoryMiB)),
		B("instanceStorageSupported", t.LocalStorageGB > 0), storage,
		E("ebsInfo", T("ebsOptimizedSupport", "default"), T("encryptionSupport", "supported"), T("nvmeSupport", "required"),
			E("ebsOptimizedInfo", I("baselineBandwidthInMbps", int64(t.EBSBandwidthMbps)), I("maximumBandwidthInMbps", int64(t.EBSBandwidthMbps)))),
		net, placement, gpu, neuron,
		B("burstablePerformanceSupported", t.Burstable), B("dedicatedHostsSupported", false), B("autoRecoverySupported", true),
		StrList("supportedBootModes", "item", []string{"legacy-bios", "uefi"}))
}

func (s *Simulator) describeInstanceTypeOfferings(_ *http.Request, _ *account, p params) ([]*el, *apiError) {
	locType := p.get("LocationType")
	if locType == "" {
		locType = "region"
	}
	if locType != "region" && locType != "availability-zone" && locType != "availability-zone-id" {
		return nil, errInvalidParam("LocationType %q is not one of region, availability-zone, availability-zone-id", locType)
	}
	type offering struct{ typ, loc string }
	var matched []offering
	for _, t := range s.regionTypes() {
		var locs []string
		switch locType {
		case "region":
			locs = []string{s.opts.Region}
		default:
			for _, z := range s.zones {
				if !t.OfferedIn(s.opts.Region, z.Name) {
					continue
				}
				if locType == "availability-zone" {
					locs = append(locs, z.Name)
				} else {
					locs = append(locs, z.ID)
				}
			}
		}
		for _, loc := range locs {
			vals := func(name string) ([]string, bool) {
				switch name {
				case "location":
					return []string{loc}, true
				case "instance-type":
					return []string{t.Name}, true
				}
				return nil, false
			}
			ok, err := matchFilters(p.filters(), vals, nil)
			if err != nil {
				return nil, err
			}
			if ok {
				matched = append(matched, offering{t.Name, loc})
			}
		}
	}
	pageItems, next, err := page(matched, p, 1000, 1000)
	if err != nil {
		return nil, err
	}
	items := make([]*el, 0, len(pageItems))
	for _, o := range pageItems {
		items = append(items, E("item", T("instanceType", o.typ), T("locationType", locType), T("location", o.loc)))
	}
	return []*el{List("instanceTypeOfferingSet", "item", items), next}, nil
}

func (s *Simulator) describeSpotPriceHistory(_ *http.Request, _ *account, p params) ([]*el, *apiError) {
	types := map[string]bool{}
	for _, n := range p.strings("InstanceType") {
		types[n] = true
	}
	products := p.strings("ProductDescription")
	for _, pd := range products {
		if pd != "Linux/UNIX" && pd != "Linux/UNIX (Amazon VPC)" {
			return []*el{List("spotPriceHistorySet", "item", nil)}, nil
		}
	}
	zoneFilter := p.get("AvailabilityZone")
	now := s.clock.Now()
	type row struct {
		typ, zone string
		price     float64
	}
	var matched []row
	for _, t := range s.regionTypes() {
		if len(types) > 0 && !types[t.Name] {
			continue
		}
		for _, z := range s.zones {
			if zoneFilter != "" && z.Name != zoneFilter {
				continue
			}
			price, ok := s.spotPrice(t, z.Name)
			if !ok || !t.OfferedIn(s.opts.Region, z.Name) {
				continue
			}
			vals := func(name string) ([]string, bool) {
				switch name {
				case "instance-type":
					return []string{t.Name}, true
				case "availability-zone":
					return []string{z.Name}, true
				case "product-description":
					return []string{"Linux/UNIX"}, true
				case "spot-price":
					return []string{strconv.FormatFloat(price, 'f', 6, 64)}, true
				}
				return nil, false
			}
			ok, err := matchFilters(p.filters(), vals, nil)
			if err != nil {
				return nil, err
			}
			if ok {
				matched = append(matched, row{t.Name, z.Name, price})
			}
		}
	}
	pageItems, next, err := page(matched, p, 1000, 10000)
	if err != nil {
		return nil, err
	}
	items := make([]*el, 0, len(pageItems))
	for _, r := range pageItems {
		items = append(items, E("item", T("instanceType", r.typ), T("productDescription", "Linux/UNIX"),
			T("spotPrice", fmt.Sprintf("%.6f", r.price)), TS("timestamp", now), T("availabilityZone", r.zone)))
	}
	return []*el{List("spotPriceHistorySet", "item", items), next}, nil
}

// spotPrice is the current spot price of a type in a zone: an admin override, else the catalog's.
func (s *Simulator) spotPrice(t *catalog.InstanceType, zone string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spotPriceLocked(t, zone)
}

func (s *Simulator) spotPriceLocked(t *catalog.InstanceType, zone string) (float64, bool) {
	base, ok := t.SpotPrice(s.opts.Region, zone)
	if !ok {
		return 0, false
	}
	if p, ok := s.spotOverrides[t.Name+"/"+zone]; ok {
		return p, true
	}
	return base, true
}

// SpotPriceRequest sets the spot price of an instance type in a zone (price 0 restores the catalog price).
type SpotPriceRequest struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	Price        float64 `json:"price"`
}

// SetSpotPrice overrides a spot price, e.g. to make consolidation or price-based choices observable.
func (s *Simulator) SetSpotPrice(req SpotPriceRequest) error {
	t, ok := s.cat.Type(req.InstanceType)
	if !ok {
		return fmt.Errorf("instance type %q is not in the catalog", req.InstanceType)
	}
	if _, ok := t.SpotPrice(s.opts.Region, req.Zone); !ok {
		return fmt.Errorf("%s has no spot offering in zone %q", req.InstanceType, req.Zone)
	}
	if req.Price < 0 {
		return fmt.Errorf("price %v must not be negative", req.Price)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := req.InstanceType + "/" + req.Zone
	if req.Price == 0 {
		delete(s.spotOverrides, key)
		return nil
	}
	s.spotOverrides[key] = req.Price
	return nil
}

// neuronCores returns the NeuronCores per device and their version of an AWS ML accelerator, as EC2 reports them in
// neuronInfo.neuronDevices[].coreInfo (Karpenter multiplies them into the aws.amazon.com/neuroncore resource).
func neuronCores(device string) (cores, version int64, ok bool) {
	switch device {
	case "Inferentia":
		return 4, 1, true
	case "Inferentia2", "Trainium":
		return 2, 2, true
	case "Trainium2":
		return 8, 3, true
	}
	return 0, 0, false
}
