package devices

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Overrides is the operator's input that adds or replaces device models without a new release: the document held
// under the OverridesKey key of the OverridesConfigMap ConfigMap.
type Overrides struct {
	// Models apply in order; a later entry for the same instance type and driver wins.
	Models []ModelOverride `json:"models"`
}

// OverridesConfigMap is the name of the ConfigMap, in Dovetail's namespace, that holds the overrides.
const OverridesConfigMap = "dovetail-dra-device-models"

// OverridesKey is the ConfigMap key holding the overrides document (YAML or JSON).
const OverridesKey = "models.yaml"

// ModelOverride sets the devices one driver publishes on the matching instance types. They replace the built-in
// model of that driver on those types; an empty Devices list removes the driver from them.
type ModelOverride struct {
	// InstanceTypes are instance type names or shell patterns (p5*.48xlarge, g6e.*).
	InstanceTypes []string `json:"instanceTypes"`
	// Driver is the DRA driver name, for example gpu.nvidia.com.
	Driver string `json:"driver"`
	// Devices are the device groups the driver publishes.
	Devices []DeviceGroup `json:"devices"`
}

// DeviceGroup is Count identical devices named <Name>-0 … <Name>-<Count-1>, spread in order over PCIeRoots PCIe
// roots (their resource.kubernetes.io/pcieRoot attribute), with the same attributes and capacity as a ResourceSlice
// writes them.
type DeviceGroup struct {
	Name       string                                                  `json:"name"`
	Count      int                                                     `json:"count,omitempty"`
	PCIeRoots  int                                                     `json:"pcieRoots,omitempty"`
	Attributes map[resourcev1.QualifiedName]resourcev1.DeviceAttribute `json:"attributes,omitempty"`
	Capacity   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity  `json:"capacity,omitempty"`
}

// ParseOverrides decodes and validates an overrides document; unknown fields are errors.
func ParseOverrides(data []byte) (*Overrides, error) {
	var o Overrides
	if err := yaml.UnmarshalStrict(data, &o); err != nil {
		return nil, fmt.Errorf("decoding DRA device model overrides: %w", err)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &o, nil
}

var cIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks every field and names the first bad one by its path (models[1].devices[0].attributes[x]).
func (o *Overrides) Validate() error {
	if o == nil {
		return nil
	}
	for i, m := range o.Models {
		at := fmt.Sprintf("models[%d]", i)
		if len(m.InstanceTypes) == 0 {
			return fmt.Errorf("%s.instanceTypes: at least one instance type name or pattern is required", at)
		}
		for j, p := range m.InstanceTypes {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return fmt.Errorf("%s.instanceTypes[%d]: %q is not a valid name or pattern", at, j, p)
			}
		}
		if errs := validation.IsDNS1123Subdomain(m.Driver); len(errs) > 0 || len(m.Driver) > resourcev1.DriverNameMaxLength {
			return fmt.Errorf("%s.driver: %q is not a driver name (a DNS subdomain of at most %d characters)", at, m.Driver, resourcev1.DriverNameMaxLength)
		}
		total := 0
		names := map[string]bool{}
		for k, g := range m.Devices {
			gat := fmt.Sprintf("%s.devices[%d]", at, k)
			if err := g.validate(gat); err != nil {
				return err
			}
			if names[g.Name] {
				return fmt.Errorf("%s.name: %q is used twice for driver %s", gat, g.Name, m.Driver)
			}
			names[g.Name] = true
			total += g.count()
		}
		if total > resourcev1.ResourceSliceMaxDevices {
			return fmt.Errorf("%s.devices: %d devices, more than the %d a ResourceSlice holds", at, total, resourcev1.ResourceSliceMaxDevices)
		}
	}
	return nil
}

func (g DeviceGroup) count() int {
	if g.Count == 0 {
		return 1
	}
	return g.Count
}

func (g DeviceGroup) validate(at string) error {
	if g.Count < 0 || g.Count > resourcev1.ResourceSliceMaxDevices {
		return fmt.Errorf("%s.count: %d is outside 1..%d", at, g.Count, resourcev1.ResourceSliceMaxDevices)
	}
	if g.PCIeRoots < 0 || g.PCIeRoots > g.count() {
		return fmt.Errorf("%s.pcieRoots: %d is outside 0..count (%d)", at, g.PCIeRoots, g.count())
	}
	longest := fmt.Sprintf("%s-%d", g.Name, g.count()-1)
	if errs := validation.IsDNS1123Label(g.Name); len(errs) > 0 || len(validation.IsDNS1123Label(longest)) > 0 {
		return fmt.Errorf("%s.name: %q does not make DNS-label device names (%s)", at, g.Name, longest)
	}
	if n := len(g.Attributes) + len(g.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice-1 {
		return fmt.Errorf("%s: %d attributes and capacities, more than %d", at, n, resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice-1)
	}
	for name, a := range g.Attributes {
		aat := fmt.Sprintf("%s.attributes[%s]", at, name)
		if err := validateQualifiedName(name); err != nil {
			return fmt.Errorf("%s: %w", aat, err)
		}
		set := 0
		for _, p := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			return fmt.Errorf("%s: exactly one of int, bool, string, version must be set, found %d", aat, set)
		}
		if a.StringValue != nil && len(*a.StringValue) > resourcev1.DeviceAttributeMaxValueLength {
			return fmt.Errorf("%s.string: longer than %d characters", aat, resourcev1.DeviceAttributeMaxValueLength)
		}
		if a.VersionValue != nil {
			if _, err := semver.Parse(*a.VersionValue); err != nil {
				return fmt.Errorf("%s.version: %q is not a semantic version: %w", aat, *a.VersionValue, err)
			}
		}
	}
	if _, ok := g.Attributes[PCIeRootAttribute]; ok && g.PCIeRoots > 0 {
		return fmt.Errorf("%s.attributes[%s]: set either this attribute or pcieRoots, not both", at, PCIeRootAttribute)
	}
	for name, c := range g.Capacity {
		if err := validateQualifiedName(name); err != nil {
			return fmt.Errorf("%s.capacity[%s]: %w", at, name, err)
		}
		if c.Value.Sign() < 0 {
			return fmt.Errorf("%s.capacity[%s].value: %s is negative", at, name, c.Value.String())
		}
		if c.RequestPolicy != nil {
			return fmt.Errorf("%s.capacity[%s].requestPolicy: consumable capacity is not supported in overrides", at, name)
		}
	}
	return nil
}

// validateQualifiedName accepts an attribute or capacity name: a C identifier of at most 32 characters, optionally
// prefixed by a DNS subdomain and a slash.
func validateQualifiedName(name resourcev1.QualifiedName) error {
	s := string(name)
	id := s
	if i := strings.LastIndex(s, "/"); i >= 0 {
		domain := s[:i]
		id = s[i+1:]
		if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 || len(domain) > resourcev1.DeviceMaxDomainLength {
			return fmt.Errorf("domain %q is not a DNS subdomain of at most %d characters", domain, resourcev1.DeviceMaxDomainLength)
		}
	}
	if !cIdentifier.MatchString(id) || len(id) > resourcev1.DeviceMaxIDLength {
		return fmt.Errorf("%q is not a C identifier of at most %d characters", id, resourcev1.DeviceMaxIDLength)
	}
	return nil
}

// matches reports whether the override covers instanceType.
func (m ModelOverride) matches(instanceType string) bool {
	for _, p := range m.InstanceTypes {
		if ok, _ := path.Match(p, instanceType); ok {
			return true
		}
	}
	return false
}

// slices builds the driver's slice on nodeName from the override.
func (m ModelOverride) slices(nodeName string) []resourcev1.ResourceSlice {
	var devs []resourcev1.Device
	for _, g := range m.Devices {
		n := g.count()
		for i := range n {
			attrs := make(map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, len(g.Attributes)+1)
			for k, v := range g.Attributes {
				attrs[k] = *v.DeepCopy()
			}
			if g.PCIeRoots > 0 {
				attrs[PCIeRootAttribute] = str(pcieRoot(rootOf(i, n, g.PCIeRoots)))
			}
			capacity := make(map[resourcev1.QualifiedName]resourcev1.DeviceCapacity, len(g.Capacity))
			for k, v := range g.Capacity {
				capacity[k] = *v.DeepCopy()
			}
			devs = append(devs, resourcev1.Device{Name: fmt.Sprintf("%s-%d", g.Name, i), Attributes: attrs, Capacity: capacity})
		}
	}
	if len(devs) == 0 {
		return nil
	}
	return poolSlices(m.Driver, nodeName, [][]resourcev1.Device{devs}, nil)
}
