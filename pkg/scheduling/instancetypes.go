package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// Well-known label keys the scheduler interprets.
const (
	labelZone         = corev1.LabelTopologyZone
	labelHostname     = corev1.LabelHostname
	labelInstanceType = corev1.LabelInstanceTypeStable
	labelCapacityType = "karpenter.sh/capacity-type"
	labelNodePool     = "karpenter.sh/nodepool"
)

// itInfo is an instance type prepared for one NodePool: vectors, labels and the DaemonSet overhead that would
// land on it.
type itInfo struct {
	it       *cloudprovider.InstanceType
	name     string
	labels   map[string]string
	capacity Vec
	alloc    Vec // allocatable
	ds       Vec // DaemonSet requests on this type in this pool
	avail    Vec // alloc - ds: what pods may use
	offers   []cloudprovider.Offering
}

// poolInfo is a NodePool prepared for a solve.
type poolInfo struct {
	np       *NodePool
	order    int
	reqs     Requirements // requirements + template labels
	minVals  map[string]int
	taints   []corev1.Taint
	types    []*itInfo
	typeKeys map[string]bool // label keys instance types define
	nodeKeys map[string]bool // label keys the pool itself sets (labels and single-valued requirements)
	// launchKeys are label keys some instance type lets the launch choose (InstanceType.LaunchLabels) and none
	// carries as a label: a pod's requirement on one narrows the node's requirements like an instance type key.
	launchKeys map[string]bool
	limits     Vec
	limited    []bool
	limNodes   int64 // -1: unlimited
	used       Vec   // usage + capacity reserved by planned nodes
	nodes      int64
}

// sig is a distinct (pool, narrowed requirements) combination with the instance types compatible with it,
// sorted by their cheapest compatible offering. Open nodes share sigs, so compatibility is computed once per sig.
type sig struct {
	id     int
	pool   *poolInfo
	reqs   Requirements
	key    string
	opts   []sigOpt
	maxAvl Vec // element-wise max of avail over opts
	err    string
	// choices caches, per topology key, the values nodes under this sig may still take.
	choices map[string][]string
	// pinPrices caches the cheapest price under this sig pinned to one value of a topology key (pinnedPrice).
	pinPrices []pinPrice
	// front caches frontier: the options no cheaper option dominates
	front []int
}

type pinPrice struct {
	key, value string
	price      float64
}

type sigOpt struct {
	t     *itInfo
	price float64
	offer cloudprovider.Offering
}

func (s *solver) preparePools() error {
	pools := make([]*NodePool, 0, len(s.snap.NodePools))
	for _, np := range s.snap.NodePools {
		if np == nil {
			continue
		}
		pools = append(pools, np)
	}
	sort.SliceStable(pools, func(i, j int) bool {
		if pools[i].Weight != pools[j].Weight {
			return pools[i].Weight > pools[j].Weight
		}
		return pools[i].Name < pools[j].Name
	})
	for i, np := range pools {
		p := &poolInfo{np: np, order: i, reqs: Requirements{}, minVals: map[string]int{}, typeKeys: map[string]bool{},
			nodeKeys: map[string]bool{labelNodePool: true}, limNodes: -1}
		for _, r := range np.Requirements {
			req, err := NewRequirement(r.Key, r.Operator, r.Values...)
			if err != nil {
				return fmt.Errorf("nodepool %s: %w", np.Name, err)
			}
			if r.MinValues != nil {
				p.minVals[r.Key] = *r.MinValues
				req.MinValues = r.MinValues
			}
			p.reqs.Add(req)
		}
		for k, v := range np.Labels {
			p.reqs.Add(In(k, v))
			p.nodeKeys[k] = true
		}
		p.reqs.Add(In(labelNodePool, np.Name))
		for _, t := range np.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
				p.taints = append(p.taints, t)
			}
		}
		p.limits = s.dims.Zero()
		p.limited = make([]bool, s.dims.Len())
		for n, q := range np.Limits {
			if n == ResourceNodes {
				p.limNodes = q.Value()
				continue
			}
			if i, ok := s.dims.index[n]; ok {
				p.limits[i] = quantityValue(i, q)
				p.limited[i] = true
			}
		}
		p.used = s.dims.Zero()
		for n, q := range np.Usage {
			if n == ResourceNodes {
				p.nodes = q.Value()
				continue
			}
			if i, ok := s.dims.index[n]; ok {
				p.used[i] = quantityValue(i, q)
			}
		}
		for _, it := range s.snap.InstanceTypes[np.Name] {
			if it == nil {
				continue
			}
			info := s.preparedType(p, it)
			for k := range info.labels {
				p.typeKeys[k] = true
			}
			for k := range it.LaunchLabels {
				if p.launchKeys == nil {
					p.launchKeys = map[string]bool{}
				}
				p.launchKeys[k] = true
			}
			p.types = append(p.types, info)
		}
		sort.SliceStable(p.types, func(a, b int) bool { return p.types[a].name < p.types[b].name })
		p.typeKeys[labelZone] = true
		p.typeKeys[labelCapacityType] = true
		for k := range p.launchKeys {
			if p.typeKeys[k] {
				delete(p.launchKeys, k)
			}
		}
		for k, r := range p.reqs {
			if !p.typeKeys[k] && r.Finite() {
				p.nodeKeys[k] = true
			}
		}
		s.pools = append(s.pools, p)
	}
	return nil
}

func (s *solver) prepareType(p *poolInfo, it *cloudprovider.InstanceType) *itInfo {
	// The instance type's own labels, read only, when they name the type (the providers' do): a copy of every
	// type's labels on every pass allocated ~3 MB a pass with the AWS catalog (~900 types).
	labels := it.Labels
	if _, ok := labels[labelInstanceType]; !ok {
		labels = make(map[string]string, len(it.Labels)+1)
		for k, v := range it.Labels {
			labels[k] = v
		}
		labels[labelInstanceType] = it.Name
	}
	info := &itInfo{it: it, name: it.Name, labels: labels}
	info.capacity = s.dims.MustFromList(it.Capacity)
	info.alloc = s.dims.MustFromList(it.Allocatable())
	info.ds = s.daemonSetOverhead(p, labels)
	info.avail = info.alloc.Clone()
	info.avail.Sub(info.ds)
	for _, o := range it.Offerings {
		if o.Available {
			info.offers = append(info.offers, o)
		}
	}
	sort.SliceStable(info.offers, func(a, b int) bool {
		if info.offers[a].Price != info.offers[b].Price {
			return info.offers[a].Price < info.offers[b].Price
		}
		if info.offers[a].Zone != info.offers[b].Zone {
			return info.offers[a].Zone < info.offers[b].Zone
		}
		return info.offers[a].CapacityType < info.offers[b].CapacityType
	})
	return info
}

// typeCompatible reports whether instance type t can launch under reqs, and its cheapest compatible offering.
func (p *poolInfo) typeCompatible(t *itInfo, reqs Requirements) (cloudprovider.Offering, bool) {
	for k, r := range reqs {
		if p.launchKeys[k] {
			if !launchAllows(t, k, r) {
				return cloudprovider.Offering{}, false
			}
			continue
		}
		if k == labelZone || k == labelCapacityType || !p.typeKeys[k] || p.nodeKeys[k] {
			continue
		}
		v, ok := t.labels[k]
		if !r.Matches(v, ok) {
			return cloudprovider.Offering{}, false
		}
	}
	zr, ct := reqs[labelZone], reqs[labelCapacityType]
	for _, o := range t.offers {
		if (zr == nil || zr.Has(o.Zone)) && (ct == nil || ct.Has(o.CapacityType)) {
			return o, true
		}
	}
	return cloudprovider.Offering{}, false
}

// launchAllows reports whether the launch of t can give label k a value r allows (or, when t lets the launch
// choose no value of k, whether r allows the label's absence).
func launchAllows(t *itInfo, k string, r *Requirement) bool {
	vs, ok := t.it.LaunchLabels[k]
	if !ok {
		return r.Matches("", false)
	}
	for _, v := range vs {
		if r.Matches(v, true) {
			return true
		}
	}
	return false
}

func reqsKey(poolName string, reqs Requirements) string {
	var b strings.Builder
	b.WriteString(poolName)
	b.WriteByte('|')
	b.WriteString(reqs.String())
	return b.String()
}

// sigFor interns the (pool, requirements) combination.
func (s *solver) sigFor(p *poolInfo, reqs Requirements) *sig {
	key := reqsKey(p.np.Name, reqs)
	if g, ok := s.sigs[key]; ok {
		return g
	}
	g := &sig{id: len(s.sigList), pool: p, reqs: reqs, key: key, maxAvl: s.dims.Zero()}
	for _, t := range p.types {
		o, ok := p.typeCompatible(t, reqs)
		if !ok {
			continue
		}
		if !nonNegative(t.avail) {
			continue
		}
		g.opts = append(g.opts, sigOpt{t: t, price: o.Price, offer: o})
		g.maxAvl.MaxInto(t.avail)
	}
	sort.SliceStable(g.opts, func(a, b int) bool {
		if g.opts[a].price != g.opts[b].price {
			return g.opts[a].price < g.opts[b].price
		}
		return g.opts[a].t.name < g.opts[b].t.name
	})
	if len(g.opts) == 0 {
		g.err = "no instance type satisfies " + s.describeReqs(p, reqs)
	} else if s.opts.MinValuesPolicy != MinValuesPolicyBest {
		if k, have, want := minValuesShort(p, reqs, g.opts, nil); k != "" {
			g.err = fmt.Sprintf("minValues: %s needs %d distinct values, instance types allow %d", k, want, have)
		}
	}
	s.sigs[key] = g
	s.sigList = append(s.sigList, g)
	return g
}

func (s *solver) describeReqs(p *poolInfo, reqs Requirements) string {
	var parts []string
	for _, k := range reqs.Keys() {
		if k == labelNodePool {
			continue
		}
		if pr, ok := p.reqs[k]; ok && pr.Equal(reqs[k]) && p.nodeKeys[k] {
			continue
		}
		parts = append(parts, reqs[k].String())
	}
	if len(parts) == 0 {
		return "the NodePool's requirements"
	}
	return strings.Join(parts, ", ")
}

func nonNegative(v Vec) bool {
	for _, x := range v {
		if x < 0 {
			return false
		}
	}
	return true
}

// minValuesShort returns the first key whose minValues the options (those with fits true, or all when fits is
// nil) no longer meet.
func minValuesShort(p *poolInfo, reqs Requirements, opts []sigOpt, fits func(*itInfo) bool) (string, int, int) {
	if len(p.minVals) == 0 {
		return "", 0, 0
	}
	keys := make([]string, 0, len(p.minVals))
	for k := range p.minVals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := p.minVals[k]
		seen := map[string]bool{}
		for _, o := range opts {
			if fits != nil && !fits(o.t) {
				continue
			}
			switch k {
			case labelZone, labelCapacityType:
				zr, ct := reqs[labelZone], reqs[labelCapacityType]
				for _, off := range o.t.offers {
					if (zr == nil || zr.Has(off.Zone)) && (ct == nil || ct.Has(off.CapacityType)) {
						if k == labelZone {
							seen[off.Zone] = true
						} else {
							seen[off.CapacityType] = true
						}
					}
				}
			default:
				if v, ok := o.t.labels[k]; ok {
					seen[v] = true
				}
			}
		}
		if len(seen) < want {
			return k, len(seen), want
		}
	}
	return "", 0, 0
}

// cheapestOffering returns the cheapest offering of t compatible with reqs.
func cheapestOffering(t *itInfo, reqs Requirements) (cloudprovider.Offering, bool) {
	zr, ct := reqs[labelZone], reqs[labelCapacityType]
	for _, o := range t.offers {
		if (zr == nil || zr.Has(o.Zone)) && (ct == nil || ct.Has(o.CapacityType)) {
			return o, true
		}
	}
	return cloudprovider.Offering{Price: math.Inf(1)}, false
}
