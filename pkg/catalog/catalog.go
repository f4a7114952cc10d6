package catalog

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

//go:embed data/catalog.json.gz
var embedded []byte

// Catalog is the set of instance types and regions known to the simulator. Types and regions are sorted by name.
type Catalog struct {
	// Source names where the figures come from (module path and version).
	Source string `json:"source"`
	// Regions lists every region that has at least one offering, sorted by name.
	Regions []Region `json:"regions"`
	// Types lists every instance type, sorted by name.
	Types []InstanceType `json:"types"`

	byName   map[string]int
	byRegion map[string]int
}

// Region is an AWS region with its availability zones.
type Region struct {
	Name  string `json:"name"`
	Zones []Zone `json:"zones"`
}

// Zone is an availability zone: its name (us-west-2a) and its zone id (usw2-az1).
type Zone struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// GPU describes the GPUs of an instance type. MemoryMiB is per GPU.
type GPU struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	Count        int    `json:"count"`
	MemoryMiB    int64  `json:"memoryMiB,omitempty"`
}

// Accelerator describes non-GPU machine-learning accelerators (AWS Inferentia / Trainium). MemoryMiB is per device.
type Accelerator struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	Count        int    `json:"count"`
	MemoryMiB    int64  `json:"memoryMiB,omitempty"`
}

// InstanceType is one EC2 instance type with its shape and its per-region offerings.
type InstanceType struct {
	Name       string `json:"name"`
	Family     string `json:"family"`
	Category   string `json:"category"`
	Generation int    `json:"generation"`
	Size       string `json:"size"`

	VCPU      int   `json:"vcpu"`
	MemoryMiB int64 `json:"memoryMiB"`
	// Architectures uses EC2 names: x86_64, arm64, i386, x86_64_mac, arm64_mac.
	Architectures   []string `json:"architectures"`
	CPUManufacturer string   `json:"cpuManufacturer,omitempty"`
	ClockSpeedGHz   float64  `json:"clockSpeedGHz,omitempty"`

	GPUs         []GPU         `json:"gpus,omitempty"`
	Accelerators []Accelerator `json:"accelerators,omitempty"`

	// LocalStorageGB is the total instance-store size; LocalNVMe says whether it is NVMe.
	LocalStorageGB int  `json:"localStorageGB,omitempty"`
	LocalNVMe      bool `json:"localNVMe,omitempty"`

	MaxENIs              int    `json:"maxENIs"`
	IPv4PerENI           int    `json:"ipv4PerENI"`
	NetworkPerformance   string `json:"networkPerformance,omitempty"`
	NetworkBandwidthMbps int    `json:"networkBandwidthMbps,omitempty"`
	EBSBandwidthMbps     int    `json:"ebsBandwidthMbps,omitempty"`

	Hypervisor          string   `json:"hypervisor,omitempty"`
	BareMetal           bool     `json:"bareMetal,omitempty"`
	CurrentGeneration   bool     `json:"currentGeneration,omitempty"`
	Burstable           bool     `json:"burstable,omitempty"`
	VirtualizationTypes []string `json:"virtualizationTypes,omitempty"`

	// Offerings maps a region name to what the type offers there.
	Offerings map[string]RegionOffering `json:"offerings"`
}

// RegionOffering is the availability and prices of one instance type in one region.
type RegionOffering struct {
	// OnDemandUSD is the hourly Linux on-demand price.
	OnDemandUSD float64 `json:"onDemand"`
	// Zones are the zone names where the type is offered, sorted.
	Zones []string `json:"zones"`
	// SpotUSD maps a zone name to its hourly Linux spot price; empty when spot is not offered.
	SpotUSD map[string]float64 `json:"spot,omitempty"`
}

// Load decodes the catalog embedded in the binary.
func Load() (*Catalog, error) {
	return Decode(bytes.NewReader(embedded))
}

// Decode reads a gzip-compressed catalog JSON document.
func Decode(r io.Reader) (*Catalog, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("opening catalog gzip stream: %w", err)
	}
	defer zr.Close()
	var c Catalog
	if err := json.NewDecoder(zr).Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding catalog JSON: %w", err)
	}
	if err := c.index(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Encode writes c as gzip-compressed JSON, sorted for reproducible output.
func Encode(w io.Writer, c *Catalog) error {
	c.sort()
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("creating gzip writer: %w", err)
	}
	enc := json.NewEncoder(zw)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encoding catalog: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("closing gzip writer: %w", err)
	}
	return nil
}

func (c *Catalog) sort() {
	sort.Slice(c.Regions, func(i, j int) bool { return c.Regions[i].Name < c.Regions[j].Name })
	for i := range c.Regions {
		z := c.Regions[i].Zones
		sort.Slice(z, func(a, b int) bool { return z[a].Name < z[b].Name })
	}
	sort.Slice(c.Types, func(i, j int) bool { return c.Types[i].Name < c.Types[j].Name })
	for i := range c.Types {
		for _, o := range c.Types[i].Offerings {
			sort.Strings(o.Zones)
		}
	}
}

func (c *Catalog) index() error {
	c.byName = make(map[string]int, len(c.Types))
	for i, t := range c.Types {
		if _, dup := c.byName[t.Name]; dup {
			return fmt.Errorf("catalog lists instance type %q twice", t.Name)
		}
		c.byName[t.Name] = i
	}
	c.byRegion = make(map[string]int, len(c.Regions))
	for i, r := range c.Regions {
		c.byRegion[r.Name] = i
	}
	return nil
}

// Type returns the named instance type.
func (c *Catalog) Type(name string) (*InstanceType, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return &c.Types[i], true
}

// Region returns the named region.
func (c *Catalog) Region(name string) (*Region, bool) {
	i, ok := c.byRegion[name]
	if !ok {
		return nil, false
	}
	return &c.Regions[i], true
}

// TypesIn returns the instance types offered in region, sorted by name.
func (c *Catalog) TypesIn(region string) []*InstanceType {
	var out []*InstanceType
	for i := range c.Types {
		if _, ok := c.Types[i].Offerings[region]; ok {
			out = append(out, &c.Types[i])
		}
	}
	return out
}

// OnDemandPrice returns the hourly on-demand price of the type in region.
func (t *InstanceType) OnDemandPrice(region string) (float64, bool) {
	o, ok := t.Offerings[region]
	if !ok || o.OnDemandUSD <= 0 {
		return 0, false
	}
	return o.OnDemandUSD, true
}

// SpotPrice returns the hourly spot price of the type in a zone of region.
func (t *InstanceType) SpotPrice(region, zone string) (float64, bool) {
	o, ok := t.Offerings[region]
	if !ok {
		return 0, false
	}
	p, ok := o.SpotUSD[zone]
	return p, ok
}

// OfferedIn reports whether the type is offered in the zone of region.
func (t *InstanceType) OfferedIn(region, zone string) bool {
	o, ok := t.Offerings[region]
	if !ok {
		return false
	}
	i := sort.SearchStrings(o.Zones, zone)
	return i < len(o.Zones) && o.Zones[i] == zone
}

// KubeArchitectures returns the Kubernetes names (amd64, arm64) of the type's architectures, deduplicated.
func (t *InstanceType) KubeArchitectures() []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range t.Architectures {
		k := KubeArch(a)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

// KubeArch maps an EC2 architecture name to the Kubernetes one ("" when Kubernetes has none).
func KubeArch(ec2Arch string) string {
	switch ec2Arch {
	case "x86_64":
		return "amd64"
	case "arm64":
		return "arm64"
	}
	return ""
}

// GPUCount returns the total number of GPUs.
func (t *InstanceType) GPUCount() int {
	n := 0
	for _, g := range t.GPUs {
		n += g.Count
	}
	return n
}

// NitroEnclaves reports whether the type supports Nitro Enclaves (EC2's nitroEnclavesSupport): the catalog does
// not record it, so it is derived from AWS's rule of thumb: a Nitro instance with at least 4 vCPUs that is not
// burstable (t*).
func (t *InstanceType) NitroEnclaves() bool {
	return t.Hypervisor == "nitro" && t.VCPU >= 4 && !strings.HasPrefix(t.Name, "t")
}

// IsMetal reports whether the size is a bare-metal size.
func (t *InstanceType) IsMetal() bool { return strings.HasPrefix(t.Size, "metal") }
