package scheduling

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

func (s *solver) plan() *Plan {
	plan := &Plan{}
	for _, n := range s.existing {
		for _, p := range n.pods {
			plan.Placements = append(plan.Placements, Placement{Pod: p.key, Node: n.name})
		}
	}
	sort.Slice(plan.Placements, func(i, j int) bool { return lessKey(plan.Placements[i].Pod, plan.Placements[j].Pod) })
	for _, n := range s.nodes[len(s.existing):] {
		if len(n.pods) == 0 {
			continue
		}
		nc := s.nodeClaimPlan(n)
		plan.NodeClaims = append(plan.NodeClaims, nc)
		plan.Cost += nc.Price
	}
	for p, why := range s.failures {
		plan.Unschedulable = append(plan.Unschedulable, PodError{Pod: p.key, Reason: why, Code: s.failureCode(p)})
	}
	sort.Slice(plan.Unschedulable, func(i, j int) bool { return lessKey(plan.Unschedulable[i].Pod, plan.Unschedulable[j].Pod) })
	return plan
}

func lessKey(a, b types.NamespacedName) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func (s *solver) nodeClaimPlan(n *candidate) *NodeClaimPlan {
	g := n.sig
	p := g.pool
	// the fitting options, cheapest first: up to MaxInstanceTypes, more while minValues needs them
	opts := make([]sigOpt, 0, min(s.opts.MaxInstanceTypes, len(g.opts)-n.ptr))
	for _, o := range g.opts[n.ptr:] {
		if !n.used.LessEq(o.t.avail) || !s.optionWithinLimits(n, o.t) || !typeTakesVolumes(o.t, n, nil) {
			continue
		}
		if len(opts) >= s.opts.MaxInstanceTypes {
			if len(p.minVals) == 0 {
				break
			}
			if k, _, _ := minValuesShort(p, g.reqs, opts, nil); k == "" {
				break
			}
		}
		opts = append(opts, o)
	}
	cheapest := g.opts[n.ptr]
	nc := &NodeClaimPlan{
		Name:          n.name,
		NodePool:      p.np.Name,
		Taints:        p.np.Taints,
		StartupTaints: p.np.StartupTaints,
		Labels:        map[string]string{},
		InstanceType:  cheapest.t.name,
		Zone:          cheapest.offer.Zone,
		CapacityType:  cheapest.offer.CapacityType,
		Price:         cheapest.price,
	}
	for k, v := range p.np.Labels {
		nc.Labels[k] = v
	}
	names := make([]string, 0, len(opts))
	nc.InstanceTypeOptions = make([]InstanceTypeOption, 0, len(opts))
	for _, o := range opts {
		names = append(names, o.t.name)
		nc.InstanceTypeOptions = append(nc.InstanceTypeOptions, InstanceTypeOption{Name: o.t.name, Zone: o.offer.Zone,
			CapacityType: o.offer.CapacityType, Price: o.price})
	}
	reqs := g.reqs.Copy()
	reqs[labelInstanceType] = reqs.Intersect(Requirements{labelInstanceType: In(labelInstanceType, names...)})[labelInstanceType]
	for _, k := range reqs.Keys() {
		r := reqs[k]
		for _, nsr := range r.NodeSelectorRequirements() {
			out := NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: nsr}
			if mv, ok := p.minVals[k]; ok {
				v := mv
				out.MinValues = &v
			}
			nc.Requirements = append(nc.Requirements, out)
		}
		if r.Finite() && !p.typeKeys[k] {
			if vs := r.Values(); len(vs) == 1 {
				nc.Labels[k] = vs[0]
			}
		}
	}
	for _, pi := range n.pods {
		nc.Pods = append(nc.Pods, pi.key)
	}
	sort.Slice(nc.Pods, func(i, j int) bool { return lessKey(nc.Pods[i], nc.Pods[j]) })
	req := n.used.Clone()
	req.Add(cheapest.t.ds)
	nc.Requests = s.dims.ToList(req)
	return nc
}

func (s *solver) optionWithinLimits(n *candidate, t *itInfo) bool {
	p := n.sig.pool
	cur := n.sig.opts[n.ptr].t
	for i, lim := range p.limited {
		if lim && p.used[i]-cur.capacity[i]+t.capacity[i] > p.limits[i] {
			return false
		}
	}
	return true
}
