package devices

import (
	"sort"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// Options chooses which device models are on.
type Options struct {
	// NVIDIAGPU turns the built-in NVIDIA GPU model on (the AWS feature gate DRANVIDIAGPU).
	NVIDIAGPU bool
	// EFA turns the built-in EFA model on (the AWS feature gate DRAEFA).
	EFA bool
	// Overrides add or replace models per instance type; they apply whatever the gates say.
	Overrides *Overrides
}

// Models answers which ResourceSlices a node of a given instance type carries. It is immutable and safe for
// concurrent use.
type Models struct {
	cat  *catalog.Catalog
	opts Options
}

// New validates the overrides and returns the models over the catalog (which may be nil: then only overrides
// give devices).
func New(cat *catalog.Catalog, opts Options) (*Models, error) {
	if err := opts.Overrides.Validate(); err != nil {
		return nil, err
	}
	return &Models{cat: cat, opts: opts}, nil
}

// Slices returns the ResourceSlices the DRA drivers would publish on node nodeName of type instanceType, sorted
// by driver then name, with each driver's pool named after the node. The result is freshly built: callers may
// change it. An instance type without modelled devices has none.
func (m *Models) Slices(instanceType, nodeName string) []resourcev1.ResourceSlice {
	byDriver := map[string][]resourcev1.ResourceSlice{}
	if m.cat != nil {
		if it, ok := m.cat.Type(instanceType); ok {
			gpus := 0
			for _, g := range it.GPUs {
				gpus += g.Count
			}
			efas := efaInterfaces(it)
			roots := 1
			if gpus > 0 && efas > 0 {
				roots = min(gpus, efas)
			}
			if m.opts.NVIDIAGPU {
				if s := nvidiaSlices(it, nodeName, roots); len(s) > 0 {
					byDriver[NVIDIADriver] = s
				}
			}
			if m.opts.EFA {
				if s := efaSlices(efas, nodeName, roots); len(s) > 0 {
					byDriver[EFADriver] = s
				}
			}
		}
	}
	if m.opts.Overrides != nil {
		for _, o := range m.opts.Overrides.Models {
			if !o.matches(instanceType) {
				continue
			}
			if s := o.slices(nodeName); len(s) > 0 {
				byDriver[o.Driver] = s
			} else {
				delete(byDriver, o.Driver)
			}
		}
	}
	drivers := make([]string, 0, len(byDriver))
	for d := range byDriver {
		drivers = append(drivers, d)
	}
	sort.Strings(drivers)
	var out []resourcev1.ResourceSlice
	for _, d := range drivers {
		out = append(out, byDriver[d]...)
	}
	return out
}
