package devices

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/dovetail/dovetail/pkg/catalog"
)

func loadCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// summary is a compact view of slices: per driver, the devices with their type/profile and pcieRoot.
type deviceSummary struct {
	Driver, Name, Kind, Root, Memory string
}

func summarize(slices []resourcev1.ResourceSlice) []deviceSummary {
	var out []deviceSummary
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			ds := deviceSummary{Driver: s.Spec.Driver, Name: d.Name}
			if a, ok := d.Attributes["type"]; ok && a.StringValue != nil {
				ds.Kind = *a.StringValue
			}
			if a, ok := d.Attributes["profile"]; ok && a.StringValue != nil {
				ds.Kind += ":" + *a.StringValue
			}
			if a, ok := d.Attributes[PCIeRootAttribute]; ok && a.StringValue != nil {
				ds.Root = *a.StringValue
			}
			if c, ok := d.Capacity["memory"]; ok {
				ds.Memory = c.Value.String()
			}
			out = append(out, ds)
		}
	}
	return out
}

func TestSlicesBuiltIn(t *testing.T) {
	cat := loadCatalog(t)
	both := Options{NVIDIAGPU: true, EFA: true}
	cases := []struct {
		name, instanceType string
		opts               Options
		want               []deviceSummary
	}{
		{name: "one A10G", instanceType: "g5.xlarge", opts: both, want: []deviceSummary{
			{NVIDIADriver, "gpu-0", "gpu", "pci0000:10", "24Gi"}}},
		{name: "gates off", instanceType: "g5.xlarge", opts: Options{}},
		{name: "no GPU", instanceType: "m5.large", opts: both},
		{name: "EFA only", instanceType: "g6e.24xlarge", opts: Options{EFA: true}, want: []deviceSummary{
			{EFADriver, "efa-0", "", "pci0000:10", ""}, {EFADriver, "efa-1", "", "pci0000:20", ""}}},
		{name: "four L40S over two roots", instanceType: "g6e.24xlarge", opts: both, want: []deviceSummary{
			{EFADriver, "efa-0", "", "pci0000:10", ""}, {EFADriver, "efa-1", "", "pci0000:20", ""},
			{NVIDIADriver, "gpu-0", "gpu", "pci0000:10", "48Gi"}, {NVIDIADriver, "gpu-1", "gpu", "pci0000:10", "48Gi"},
			{NVIDIADriver, "gpu-2", "gpu", "pci0000:20", "48Gi"}, {NVIDIADriver, "gpu-3", "gpu", "pci0000:20", "48Gi"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(cat, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(m.Slices(tc.instanceType, "node-a"))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSlicesMIG(t *testing.T) {
	m, err := New(loadCatalog(t), Options{NVIDIAGPU: true, EFA: true})
	if err != nil {
		t.Fatal(err)
	}
	slices := m.Slices("p4d.24xlarge", "node-a")
	var gpuSlices []resourcev1.ResourceSlice
	roots := map[string][]string{}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if d.Name == "efa-0" || d.Name == "gpu-0" || d.Name == "gpu-1" || d.Name == "gpu-2" {
				roots[*d.Attributes[PCIeRootAttribute].StringValue] = append(roots[*d.Attributes[PCIeRootAttribute].StringValue], d.Name)
			}
		}
		if s.Spec.Driver == NVIDIADriver {
			gpuSlices = append(gpuSlices, s)
		}
	}
	if diff := cmp.Diff(map[string][]string{"pci0000:10": {"efa-0", "gpu-0", "gpu-1"}, "pci0000:20": {"gpu-2"}}, roots); diff != "" {
		t.Errorf("PCIe roots (-want +got):\n%s", diff)
	}
	if len(gpuSlices) != 8 {
		t.Fatalf("got %d GPU slices, want one per GPU (8)", len(gpuSlices))
	}
	s := gpuSlices[0]
	if s.Spec.Pool.ResourceSliceCount != 8 || s.Spec.Pool.Name != "node-a" || *s.Spec.NodeName != "node-a" {
		t.Errorf("pool = %+v node %v", s.Spec.Pool, *s.Spec.NodeName)
	}
	if len(s.Spec.SharedCounters) != 1 || s.Spec.SharedCounters[0].Name != "gpu-0-counter-set" {
		t.Fatalf("shared counters = %+v", s.Spec.SharedCounters)
	}
	profiles := map[string]int{}
	for _, d := range s.Spec.Devices {
		if len(d.ConsumesCounters) != 1 || d.ConsumesCounters[0].CounterSet != "gpu-0-counter-set" {
			t.Errorf("device %s consumes %+v", d.Name, d.ConsumesCounters)
		}
		profiles[*d.Attributes["type"].StringValue+"/"+strOr(d.Attributes["profile"].StringValue)]++
	}
	want := map[string]int{"gpu/": 1, "mig/1g.5gb": 7, "mig/1g.10gb": 4, "mig/2g.10gb": 3, "mig/3g.20gb": 2, "mig/4g.20gb": 1, "mig/7g.40gb": 1}
	if diff := cmp.Diff(want, profiles); diff != "" {
		t.Errorf("devices per profile (-want +got):\n%s", diff)
	}
	// The whole GPU takes the whole counter set.
	total := s.Spec.SharedCounters[0].Counters
	whole := s.Spec.Devices[0].ConsumesCounters[0].Counters
	for name, c := range total {
		w := whole[name].Value
		if w.Cmp(c.Value) != 0 {
			t.Errorf("whole GPU consumes %s of counter %s, the set has %s", w.String(), name, c.Value.String())
		}
	}
}

func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestSlicesWithinAPILimits: every catalog type's slices respect the ResourceSlice limits the API server enforces.
func TestSlicesWithinAPILimits(t *testing.T) {
	cat := loadCatalog(t)
	m, err := New(cat, Options{NVIDIAGPU: true, EFA: true})
	if err != nil {
		t.Fatal(err)
	}
	modelled := 0
	for _, it := range cat.Types {
		slices := m.Slices(it.Name, "ip-10-0-0-1.us-west-2.compute.internal")
		if len(slices) > 0 {
			modelled++
		}
		names := map[string]bool{}
		for _, s := range slices {
			if names[s.Name] {
				t.Errorf("%s: slice name %s twice", it.Name, s.Name)
			}
			names[s.Name] = true
			if n := len(s.Spec.Devices); n == 0 || n > resourcev1.ResourceSliceMaxDevices {
				t.Errorf("%s: slice %s has %d devices", it.Name, s.Name, n)
			}
			counters := 0
			devNames := map[string]bool{}
			for _, d := range s.Spec.Devices {
				if devNames[d.Name] {
					t.Errorf("%s: device %s twice", it.Name, d.Name)
				}
				devNames[d.Name] = true
				if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
					t.Errorf("%s: device %s has %d attributes and capacities", it.Name, d.Name, n)
				}
				for _, c := range d.ConsumesCounters {
					counters += len(c.Counters)
				}
			}
			if counters > maxDeviceCountersPerSlice {
				t.Errorf("%s: slice %s consumes %d counters", it.Name, s.Name, counters)
			}
		}
	}
	if modelled < 40 {
		t.Errorf("only %d instance types have device models", modelled)
	}
}

func TestOverrides(t *testing.T) {
	doc := `
models:
- instanceTypes: ["p7*.48xlarge"]
  driver: gpu.nvidia.com
  devices:
  - name: gpu
    count: 4
    pcieRoots: 2
    attributes:
      type: {string: gpu}
      productName: {string: "NVIDIA B300"}
      cudaComputeCapability: {version: "10.3.0"}
    capacity:
      memory: {value: 270Gi}
- instanceTypes: [g6e.24xlarge]
  driver: dra.net
  devices: []
`
	o, err := ParseOverrides([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(loadCatalog(t), Options{NVIDIAGPU: true, EFA: true, Overrides: o})
	if err != nil {
		t.Fatal(err)
	}
	got := summarize(m.Slices("p7e.48xlarge", "n"))
	want := []deviceSummary{
		{NVIDIADriver, "gpu-0", "gpu", "pci0000:10", "270Gi"}, {NVIDIADriver, "gpu-1", "gpu", "pci0000:10", "270Gi"},
		{NVIDIADriver, "gpu-2", "gpu", "pci0000:20", "270Gi"}, {NVIDIADriver, "gpu-3", "gpu", "pci0000:20", "270Gi"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("new type (-want +got):\n%s", diff)
	}
	for _, d := range summarize(m.Slices("g6e.24xlarge", "n")) {
		if d.Driver == EFADriver {
			t.Errorf("EFA device %s left after an empty override", d.Name)
		}
	}
}

func TestParseOverridesErrors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown field", "models: [{instanceTypes: [a], driver: x.y, devices: [], colour: red}]", `unknown field "colour"`},
		{"no types", "models: [{driver: x.y}]", "models[0].instanceTypes: at least one"},
		{"bad pattern", "models: [{instanceTypes: ['p[5'], driver: x.y}]", `models[0].instanceTypes[0]: "p[5" is not a valid`},
		{"bad driver", "models: [{instanceTypes: [a], driver: X_Y}]", `models[0].driver: "X_Y" is not a driver name`},
		{"two values", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: d, attributes: {a: {int: 1, string: s}}}]}]",
			"models[0].devices[0].attributes[a]: exactly one of int, bool, string, version must be set, found 2"},
		{"bad version", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: d, attributes: {v: {version: '1.2'}}}]}]",
			`models[0].devices[0].attributes[v].version: "1.2" is not a semantic version`},
		{"bad attribute name", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: d, attributes: {'x/1a': {int: 1}}}]}]",
			`models[0].devices[0].attributes[x/1a]: "1a" is not a C identifier`},
		{"bad device name", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: GPU}]}]", `models[0].devices[0].name: "GPU"`},
		{"too many", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: a, count: 100}, {name: b, count: 29}]}]",
			"models[0].devices: 129 devices, more than the 128"},
		{"negative capacity", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: d, capacity: {memory: {value: -1}}}]}]",
			"models[0].devices[0].capacity[memory].value: -1 is negative"},
		{"roots and attribute", "models: [{instanceTypes: [a], driver: x.y, devices: [{name: d, count: 2, pcieRoots: 2, attributes: {'resource.kubernetes.io/pcieRoot': {string: p}}}]}]",
			"set either this attribute or pcieRoots"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOverrides([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// maxDeviceCountersPerSlice is the kube-apiserver's limit, in Kubernetes 1.34 (the local control plane's), on the
// counters all devices of one ResourceSlice consume (k8s.io/api v0.34's ResourceSliceMaxDeviceCountersPerSlice).
const maxDeviceCountersPerSlice = 1024
