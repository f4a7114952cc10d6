// Command gen-catalog turns ec2instances.info data (as shipped in the Go module
// github.com/cristim/ec2-instances-info) into the compact catalog embedded by pkg/catalog.
//
//	go run ./hack/gen-catalog [-module-dir DIR] [-out pkg/catalog/data/catalog.json.gz]
//
// Without -module-dir it runs `go mod download -json` for the pinned version to find the data.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dovetail/dovetail/pkg/catalog"
)

const (
	sourceModule  = "github.com/cristim/ec2-instances-info"
	sourceVersion = "v0.0.0-20250528091325-32acf84f42eb"
)

func main() {
	moduleDir := flag.String("module-dir", "", "folder of "+sourceModule+" (default: found with go mod download)")
	out := flag.String("out", "pkg/catalog/data/catalog.json.gz", "catalog file to write")
	notice := flag.String("notice", "pkg/catalog/data/NOTICE", "license notice file to write")
	flag.Parse()
	if err := run(*moduleDir, *out, *notice); err != nil {
		fmt.Fprintln(os.Stderr, "gen-catalog:", err)
		os.Exit(1)
	}
}

func run(moduleDir, out, notice string) error {
	if moduleDir == "" {
		dir, err := download()
		if err != nil {
			return err
		}
		moduleDir = dir
	}
	raw, err := os.ReadFile(filepath.Join(moduleDir, "data", "instances.json"))
	if err != nil {
		return fmt.Errorf("reading source data: %w", err)
	}
	var src []rawType
	if err := json.Unmarshal(raw, &src); err != nil {
		return fmt.Errorf("decoding instances.json: %w", err)
	}
	cat, skipped := convert(src)
	cat.Source = sourceModule + "@" + sourceVersion + " data/instances.json"
	var buf bytes.Buffer
	if err := catalog.Encode(&buf, cat); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing catalog: %w", err)
	}
	lic, err := os.ReadFile(filepath.Join(moduleDir, "LICENSE"))
	if err != nil {
		return fmt.Errorf("reading source license: %w", err)
	}
	header := "pkg/catalog/data/catalog.json.gz is derived from ec2instances.info data as redistributed by\n" +
		sourceModule + "@" + sourceVersion + " (data/instances.json).\n" +
		"That module's LICENSE follows; the data is under the MIT license quoted in it.\n\n"
	if err := os.WriteFile(notice, append([]byte(header), lic...), 0o644); err != nil {
		return fmt.Errorf("writing notice: %w", err)
	}
	fmt.Printf("wrote %s: %d instance types, %d regions, %d bytes (skipped %d without ENI data or Linux prices)\n",
		out, len(cat.Types), len(cat.Regions), buf.Len(), skipped)
	return nil
}

func download() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", sourceModule+"@"+sourceVersion)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", sourceModule, sourceVersion, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(b, &info); err != nil {
		return "", fmt.Errorf("decoding go mod download output: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", sourceModule, info.Error)
	}
	return info.Dir, nil
}

type rawType struct {
	InstanceType      string              `json:"instance_type"`
	VCPU              int                 `json:"vCPU"`
	Memory            float64             `json:"memory"`
	Arch              []string            `json:"arch"`
	PhysicalProcessor *string             `json:"physical_processor"`
	ClockSpeed        *string             `json:"clock_speed_ghz"`
	GPU               int                 `json:"GPU"`
	GPUMemory         float64             `json:"GPU_memory"`
	GPUModel          *string             `json:"GPU_model"`
	Storage           *rawStorage         `json:"storage"`
	VPC               *rawVPC             `json:"vpc"`
	NetworkPerf       string              `json:"network_performance"`
	EBSBaseline       float64             `json:"ebs_baseline_bandwidth"`
	Generation        string              `json:"generation"`
	Virtualization    []string            `json:"linux_virtualization_types"`
	AvailabilityZones map[string][]string `json:"availability_zones"`
	Pricing           map[string]struct {
		Linux *struct {
			OnDemand json.RawMessage `json:"ondemand"`
			Spot     []string        `json:"spot"`
			SpotAvg  string          `json:"spot_avg"`
		} `json:"linux"`
	} `json:"pricing"`
}

type rawStorage struct {
	Devices int     `json:"devices"`
	Size    float64 `json:"size"`
	Unit    string  `json:"size_unit"`
	NVMe    bool    `json:"nvme_ssd"`
}

type rawVPC struct {
	IPsPerENI int `json:"ips_per_eni"`
	MaxENIs   int `json:"max_enis"`
}

var (
	nameRE    = regexp.MustCompile(`^([a-z]+)(?:-[^.]*?)?(\d+)?`)
	clockRE   = regexp.MustCompile(`([0-9.]+)\s*GHz`)
	gigabitRE = regexp.MustCompile(`(?:(\d+)x\s+)?([0-9.]+)\s+Gigabit`)
	zoneIDRE  = regexp.MustCompile(`-az(\d+)$`)
)

// Families that run on the Xen hypervisor (everything else current is Nitro; metal has none).
var xenFamilies = map[string]bool{
	"t1": true, "t2": true, "m1": true, "m2": true, "m3": true, "m4": true, "c1": true, "c3": true, "c4": true,
	"r3": true, "r4": true, "x1": true, "x1e": true, "i2": true, "i3": true, "d2": true, "h1": true, "g2": true,
	"g3": true, "g3s": true, "p2": true, "p3": true, "f1": true, "cc2": true, "cr1": true, "hs1": true,
}

func convert(src []rawType) (*catalog.Catalog, int) {
	regionZones := map[string]map[string]string{} // region -> zone name -> id
	var types []catalog.InstanceType
	skipped := 0
	for _, r := range src {
		t, ok := convertType(r, regionZones)
		if !ok {
			skipped++
			continue
		}
		types = append(types, t)
	}
	var regions []catalog.Region
	for name, zones := range regionZones {
		reg := catalog.Region{Name: name}
		for zn, id := range zones {
			reg.Zones = append(reg.Zones, catalog.Zone{Name: zn, ID: id})
		}
		regions = append(regions, reg)
	}
	return &catalog.Catalog{Regions: regions, Types: types}, skipped
}

func convertType(r rawType, regionZones map[string]map[string]string) (catalog.InstanceType, bool) {
	if r.VPC == nil || r.VPC.MaxENIs == 0 || r.VCPU == 0 {
		return catalog.InstanceType{}, false
	}
	family, size, _ := strings.Cut(r.InstanceType, ".")
	t := catalog.InstanceType{
		Name:                 r.InstanceType,
		Family:               family,
		Size:                 size,
		VCPU:                 r.VCPU,
		MemoryMiB:            int64(math.Round(r.Memory * 1024)),
		Architectures:        append([]string(nil), r.Arch...),
		MaxENIs:              r.VPC.MaxENIs,
		IPv4PerENI:           r.VPC.IPsPerENI,
		NetworkPerformance:   r.NetworkPerf,
		NetworkBandwidthMbps: bandwidthMbps(r.NetworkPerf),
		EBSBandwidthMbps:     int(r.EBSBaseline),
		BareMetal:            strings.HasPrefix(size, "metal"),
		CurrentGeneration:    r.Generation == "current",
		Burstable:            strings.HasPrefix(family, "t"),
		Offerings:            map[string]catalog.RegionOffering{},
	}
	if m := nameRE.FindStringSubmatch(family); m != nil {
		t.Category = m[1]
		t.Generation, _ = strconv.Atoi(m[2])
	}
	sort.Strings(t.Architectures)
	for _, v := range r.Virtualization {
		t.VirtualizationTypes = append(t.VirtualizationTypes, strings.ToLower(v))
	}
	if len(t.VirtualizationTypes) == 0 {
		t.VirtualizationTypes = []string{"hvm"}
	}
	switch {
	case t.BareMetal:
		t.Hypervisor = ""
	case xenFamilies[family]:
		t.Hypervisor = "xen"
	default:
		t.Hypervisor = "nitro"
	}
	if r.PhysicalProcessor != nil {
		p := *r.PhysicalProcessor
		switch {
		case strings.HasPrefix(p, "Intel"):
			t.CPUManufacturer = "Intel"
		case strings.HasPrefix(p, "AMD"):
			t.CPUManufacturer = "AMD"
		case strings.HasPrefix(p, "AWS"):
			t.CPUManufacturer = "AWS"
		case strings.HasPrefix(p, "Apple"):
			t.CPUManufacturer = "Apple"
		}
	}
	if r.ClockSpeed != nil {
		if m := clockRE.FindStringSubmatch(*r.ClockSpeed); m != nil {
			t.ClockSpeedGHz, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if r.GPU > 0 {
		perDevice := int64(0)
		if r.GPUMemory > 0 {
			perDevice = int64(math.Round(r.GPUMemory * 1024 / float64(r.GPU)))
		}
		model := ""
		if r.GPUModel != nil {
			model = *r.GPUModel
		}
		switch {
		case strings.HasPrefix(family, "trn"):
			name := "Trainium"
			if strings.HasPrefix(family, "trn2") {
				name = "Trainium2"
			}
			t.Accelerators = []catalog.Accelerator{{Name: name, Manufacturer: "AWS", Count: r.GPU, MemoryMiB: perDevice}}
		case strings.HasPrefix(model, "AWS "):
			t.Accelerators = []catalog.Accelerator{{Name: strings.TrimPrefix(model, "AWS "), Manufacturer: "AWS", Count: r.GPU, MemoryMiB: perDevice}}
		case model != "":
			manu, name, _ := strings.Cut(model, " ")
			name = strings.TrimSuffix(strings.TrimPrefix(name, "Tesla "), " Tensor Core")
			t.GPUs = []catalog.GPU{{Name: name, Manufacturer: manu, Count: r.GPU, MemoryMiB: perDevice}}
		}
	}
	if r.Storage != nil && r.Storage.Size > 0 {
		gb := r.Storage.Size * float64(max(r.Storage.Devices, 1))
		if r.Storage.Unit == "TB" {
			gb *= 1000
		}
		t.LocalStorageGB = int(gb)
		t.LocalNVMe = r.Storage.NVMe
	}
	for region, p := range r.Pricing {
		if p.Linux == nil {
			continue
		}
		od := parsePrice(p.Linux.OnDemand)
		if od <= 0 {
			continue
		}
		var zones []string
		for _, id := range r.AvailabilityZones[region] {
			m := zoneIDRE.FindStringSubmatch(id)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if n < 1 || n > 26 {
				continue
			}
			zn := region + string(rune('a'+n-1))
			zones = append(zones, zn)
			if regionZones[region] == nil {
				regionZones[region] = map[string]string{}
			}
			regionZones[region][zn] = id
		}
		if len(zones) == 0 {
			continue
		}
		sort.Strings(zones)
		t.Offerings[region] = catalog.RegionOffering{
			OnDemandUSD: od,
			Zones:       zones,
			SpotUSD:     spotPrices(t.Name, zones, p.Linux.Spot, p.Linux.SpotAvg),
		}
	}
	if len(t.Offerings) == 0 {
		return catalog.InstanceType{}, false
	}
	return t, true
}

// spotPrices spreads the region's spot figures over its zones deterministically: when the data has at least one
// figure per zone they are assigned in a type-dependent rotation; otherwise each zone gets the average varied by
// up to ±5% from a hash of type and zone.
func spotPrices(typeName string, zones []string, spot []string, avg string) map[string]float64 {
	var vals []float64
	for _, s := range spot {
		if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 {
			vals = append(vals, v)
		}
	}
	sort.Float64s(vals)
	a, _ := strconv.ParseFloat(avg, 64)
	if a <= 0 && len(vals) > 0 {
		for _, v := range vals {
			a += v
		}
		a /= float64(len(vals))
	}
	if a <= 0 {
		return nil
	}
	out := make(map[string]float64, len(zones))
	rot := int(hash(typeName) % uint32(max(len(vals), 1)))
	for i, z := range zones {
		if len(vals) >= len(zones) {
			out[z] = vals[(i+rot)%len(vals)]
			continue
		}
		f := 1 + (float64(hash(typeName+"/"+z)%21)-10)/200
		out[z] = math.Round(a*f*1e6) / 1e6
	}
	return out
}

func hash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

func parsePrice(raw json.RawMessage) float64 {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		v, _ := strconv.ParseFloat(s, 64)
		return v
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		return f
	}
	return 0
}

func bandwidthMbps(perf string) int {
	if m := gigabitRE.FindStringSubmatch(perf); m != nil {
		n := 1.0
		if m[1] != "" {
			n, _ = strconv.ParseFloat(m[1], 64)
		}
		g, _ := strconv.ParseFloat(m[2], 64)
		return int(n * g * 1000)
	}
	switch perf {
	case "Very Low":
		return 50
	case "Low":
		return 300
	case "Low to Moderate":
		return 500
	case "Moderate":
		return 750
	case "High":
		return 1000
	}
	return 0
}
