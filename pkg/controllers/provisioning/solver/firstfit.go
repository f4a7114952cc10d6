package solver

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// MaxInstanceTypes is how many instance types, cheapest first, a new NodeClaim lists.
const MaxInstanceTypes = 60

// ResourceNodes is the pseudo-resource "nodes" in NodePool limits and usage.
const ResourceNodes corev1.ResourceName = "nodes"

// FirstFit places pods largest first: into in-flight NodeClaims when they fit, then into NodeClaims opened in
// this pass, then into a new NodeClaim of the first NodePool (highest weight, then name) that can hold the pod.
// It honours nodeSelector and required node affinity on labels the NodePool or its instance types provide,
// tolerations against NodePool taints, NodePool limits, and the requests of DaemonSets that would run on a new
// node. It ignores pod (anti-)affinity, topology spread, preferences, minValues and volume topology: the real
// scheduler handles those.
type FirstFit struct{}

// Solve implements Solver.
func (FirstFit) Solve(_ context.Context, in Input) Plan {
	plan := Plan{Existing: map[string]string{}, Unschedulable: map[string]string{}}
	pods := append([]*corev1.Pod(nil), in.Pods...)
	requests := make(map[*corev1.Pod]corev1.ResourceList, len(pods))
	for _, p := range pods {
		requests[p] = PodRequests(p)
	}
	sort.SliceStable(pods, func(i, j int) bool {
		ri, rj := requests[pods[i]], requests[pods[j]]
		if c := cmpQuantity(ri, rj, corev1.ResourceCPU); c != 0 {
			return c > 0
		}
		if c := cmpQuantity(ri, rj, corev1.ResourceMemory); c != 0 {
			return c > 0
		}
		return PodKey(pods[i]) < PodKey(pods[j])
	})

	inflight := make([]*InFlightClaim, len(in.InFlight))
	for i := range in.InFlight {
		c := in.InFlight[i]
		c.Available = Sum(c.Available)
		inflight[i] = &c
	}
	pools := newPools(in.NodePools, in.DaemonSets)
	var open []*openClaim

	for _, pod := range pods {
		req := requests[pod]
		terms := PodRequirementTerms(pod)
		if c := placeInFlight(inflight, pod, req, terms); c != nil {
			plan.Existing[PodKey(pod)] = c.NodeClaim.Name
			continue
		}
		placed := false
		for _, c := range open {
			if c.tryAdd(pod, req, terms) {
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		var reasons []string
		for _, ps := range pools {
			c, reason := ps.open(pod, req, terms)
			if c != nil {
				open = append(open, c)
				placed = true
				break
			}
			reasons = append(reasons, fmt.Sprintf("nodepool %q: %s", ps.np.Name, reason))
		}
		if !placed {
			if len(pools) == 0 {
				reasons = append(reasons, "no ready NodePool")
			}
			plan.Unschedulable[PodKey(pod)] = strings.Join(reasons, "; ")
		}
	}
	for _, c := range open {
		plan.NewNodeClaims = append(plan.NewNodeClaims, c.result())
	}
	return plan
}

func placeInFlight(claims []*InFlightClaim, pod *corev1.Pod, req corev1.ResourceList, terms [][]corev1.NodeSelectorRequirement) *InFlightClaim {
	for _, c := range claims {
		if ok, _ := Tolerates(pod.Spec.Tolerations, c.Taints); !ok {
			continue
		}
		if !anyTermMatches(c.Labels, terms) || !Fits(req, c.Available) {
			continue
		}
		c.Available = Subtract(c.Available, req)
		return c
	}
	return nil
}

func anyTermMatches(labels map[string]string, terms [][]corev1.NodeSelectorRequirement) bool {
	for _, t := range terms {
		if MatchLabels(labels, t) {
			return true
		}
	}
	return false
}

// option is an instance type with the offerings still allowed for a claim.
type option struct {
	it        *cloudprovider.InstanceType
	offerings []cloudprovider.Offering
}

type poolState struct {
	np *karpv1.NodePool
	// labels are the labels every node of the pool gets that do not come from the instance type: template
	// labels, single-valued In requirements and the nodepool label.
	labels map[string]string
	// itKeys are the label keys instance types provide.
	itKeys map[string]bool
	base   []option
	limits corev1.ResourceList
	remain corev1.ResourceList
	// daemons is the requests of the DaemonSet pods every new node of the pool runs.
	daemons corev1.ResourceList
}

func newPools(in []NodePoolOption, daemonSets []*appsv1.DaemonSet) []*poolState {
	var out []*poolState
	for _, o := range in {
		ps := &poolState{np: o.NodePool, labels: map[string]string{}, itKeys: map[string]bool{
			corev1.LabelTopologyZone: true, karpv1.CapacityTypeLabelKey: true,
		}}
		for _, it := range o.InstanceTypes {
			for k := range it.Labels {
				ps.itKeys[k] = true
			}
		}
		for k, v := range o.NodePool.Spec.Template.Labels {
			ps.labels[k] = v
		}
		for _, r := range o.NodePool.Spec.Template.Spec.Requirements {
			if !ps.itKeys[r.Key] && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				ps.labels[r.Key] = r.Values[0]
			}
		}
		ps.labels[karpv1.NodePoolLabelKey] = o.NodePool.Name
		for _, it := range o.InstanceTypes {
			var offs []cloudprovider.Offering
			for _, off := range it.Offerings {
				if off.Available {
					offs = append(offs, off)
				}
			}
			if len(offs) > 0 {
				ps.base = append(ps.base, option{it: it, offerings: offs})
			}
		}
		ps.base = ps.filter(ps.base, karpv1.NodeSelectorRequirements(o.NodePool.Spec.Template.Spec.Requirements))
		if len(o.NodePool.Spec.Limits) > 0 {
			ps.limits = corev1.ResourceList(o.NodePool.Spec.Limits)
			ps.remain = ps.limited(Subtract(ps.limits, o.Usage))
		}
		ps.daemons = ps.daemonOverhead(daemonSets)
		out = append(out, ps)
	}
	sort.SliceStable(out, func(i, j int) bool {
		wi, wj := out[i].np.WeightOrZero(), out[j].np.WeightOrZero()
		if wi != wj {
			return wi > wj
		}
		return out[i].np.Name < out[j].np.Name
	})
	return out
}

// daemonOverhead sums the pod requests of the DaemonSets that would run on the pool's nodes: those tolerating
// its taints whose node selector and required affinity allow the pool's labels (keys that come from instance
// types are assumed to match, overestimating rather than underestimating).
func (ps *poolState) daemonOverhead(daemonSets []*appsv1.DaemonSet) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, ds := range daemonSets {
		pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		if ok, _ := Tolerates(pod.Spec.Tolerations, ps.np.Spec.Template.Spec.Taints); !ok {
			continue
		}
		runs := false
		for _, term := range PodRequirementTerms(pod) {
			if ok, _ := ps.labelsAllow(term); ok {
				runs = true
				break
			}
		}
		if runs {
			Add(out, PodRequests(pod))
		}
	}
	return out
}

// filter keeps the options and offerings allowed by reqs on instance-type keys. Requirements on other keys are
// checked against the pool's labels by labelsAllow.
func (ps *poolState) filter(opts []option, reqs []corev1.NodeSelectorRequirement) []option {
	var out []option
	for _, o := range opts {
		ok := true
		for _, r := range reqs {
			if !ps.itKeys[r.Key] || r.Key == corev1.LabelTopologyZone || r.Key == karpv1.CapacityTypeLabelKey {
				continue
			}
			v, present := o.it.Labels[r.Key]
			if !Match(r, v, present) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		var offs []cloudprovider.Offering
		for _, off := range o.offerings {
			if offeringAllowed(off, reqs) {
				offs = append(offs, off)
			}
		}
		if len(offs) > 0 {
			out = append(out, option{it: o.it, offerings: offs})
		}
	}
	return out
}

func offeringAllowed(off cloudprovider.Offering, reqs []corev1.NodeSelectorRequirement) bool {
	for _, r := range reqs {
		switch r.Key {
		case corev1.LabelTopologyZone:
			if !Match(r, off.Zone, true) {
				return false
			}
		case karpv1.CapacityTypeLabelKey:
			if !Match(r, off.CapacityType, true) {
				return false
			}
		}
	}
	return true
}

// labelsAllow checks requirements on keys not provided by instance types against the pool's labels.
func (ps *poolState) labelsAllow(reqs []corev1.NodeSelectorRequirement) (bool, string) {
	for _, r := range reqs {
		if ps.itKeys[r.Key] {
			continue
		}
		v, present := ps.labels[r.Key]
		if !Match(r, v, present) {
			if present {
				return false, fmt.Sprintf("label %s=%s does not satisfy %s %s %v", r.Key, v, r.Key, r.Operator, r.Values)
			}
			return false, fmt.Sprintf("no node would have label %s required by %s %s %v", r.Key, r.Key, r.Operator, r.Values)
		}
	}
	return true, ""
}

// fitting keeps options whose allocatable holds requests and whose capacity stays within the remaining limit
// (plus what the claim already reserved).
func (ps *poolState) fitting(opts []option, requests corev1.ResourceList, reserved corev1.ResourceList) []option {
	var out []option
	for _, o := range opts {
		if !Fits(requests, o.it.Allocatable()) {
			continue
		}
		if ps.remain != nil {
			room := Sum(ps.remain, reserved)
			need := Sum(o.it.Capacity, corev1.ResourceList{ResourceNodes: resource.MustParse("1")})
			if Exceeds(need, room) != "" {
				continue
			}
		}
		out = append(out, o)
	}
	return out
}

func (ps *poolState) open(pod *corev1.Pod, req corev1.ResourceList, terms [][]corev1.NodeSelectorRequirement) (*openClaim, string) {
	if len(ps.base) == 0 {
		return nil, "no instance type offering is allowed by its requirements and available"
	}
	if ok, t := Tolerates(pod.Spec.Tolerations, ps.np.Spec.Template.Spec.Taints); !ok {
		return nil, fmt.Sprintf("pod does not tolerate taint %s=%s:%s", t.Key, t.Value, t.Effect)
	}
	reason := ""
	for _, term := range terms {
		if ok, why := ps.labelsAllow(term); !ok {
			reason = why
			continue
		}
		opts := ps.filter(ps.base, term)
		if len(opts) == 0 {
			reason = "no instance type offering matches the pod's node selector or affinity"
			continue
		}
		fitting := ps.fitting(opts, Sum(req, ps.daemons), nil)
		if len(fitting) == 0 {
			reason = "no instance type has room for the pod's requests within the NodePool's limits"
			if ps.remain == nil {
				reason = "no instance type has room for the pod's requests"
			}
			continue
		}
		c := &openClaim{pool: ps, options: fitting, requests: Sum(req, ps.daemons), pods: []*corev1.Pod{pod}, term: term}
		c.reserve()
		return c, ""
	}
	return nil, reason
}

type openClaim struct {
	pool     *poolState
	options  []option
	requests corev1.ResourceList
	pods     []*corev1.Pod
	term     []corev1.NodeSelectorRequirement
	reserved corev1.ResourceList
}

// reserve counts the largest capacity among the options against the pool's remaining limit.
func (c *openClaim) reserve() {
	if c.pool.remain == nil {
		return
	}
	c.pool.remain = Sum(c.pool.remain, c.reserved)
	c.reserved = maxCapacity(c.options)
	c.pool.remain = c.pool.limited(Subtract(c.pool.remain, c.reserved))
}

// limited keeps only the resources the NodePool limits: usage of unlimited ones (memory when only cpu is
// limited, pods, ...) must not show up as negative remaining room.
func (ps *poolState) limited(l corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range l {
		if _, ok := ps.limits[name]; ok {
			out[name] = q
		}
	}
	return out
}

func (c *openClaim) tryAdd(pod *corev1.Pod, req corev1.ResourceList, terms [][]corev1.NodeSelectorRequirement) bool {
	if ok, _ := Tolerates(pod.Spec.Tolerations, c.pool.np.Spec.Template.Spec.Taints); !ok {
		return false
	}
	total := Sum(c.requests, req)
	for _, term := range terms {
		if ok, _ := c.pool.labelsAllow(term); !ok {
			continue
		}
		opts := c.pool.fitting(c.pool.filter(c.options, term), total, c.reserved)
		if len(opts) == 0 {
			continue
		}
		c.options, c.requests = opts, total
		c.pods = append(c.pods, pod)
		c.reserve()
		return true
	}
	return false
}

func (c *openClaim) result() NewNodeClaim {
	opts := append([]option(nil), c.options...)
	sort.SliceStable(opts, func(i, j int) bool {
		pi, pj := minPrice(opts[i]), minPrice(opts[j])
		if pi != pj {
			return pi < pj
		}
		return opts[i].it.Name < opts[j].it.Name
	})
	if len(opts) > MaxInstanceTypes {
		opts = opts[:MaxInstanceTypes]
	}
	var types []*cloudprovider.InstanceType
	names, zones, capTypes := []string{}, map[string]bool{}, map[string]bool{}
	for _, o := range opts {
		it := *o.it
		it.Offerings = o.offerings
		types = append(types, &it)
		names = append(names, it.Name)
		for _, off := range o.offerings {
			zones[off.Zone] = true
			capTypes[off.CapacityType] = true
		}
	}
	var reqs []karpv1.NodeSelectorRequirementWithMinValues
	var itMin *int
	for _, r := range c.pool.np.Spec.Template.Spec.Requirements {
		switch r.Key {
		case corev1.LabelInstanceTypeStable:
			if r.MinValues != nil {
				itMin = r.MinValues
			}
			continue
		case corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey:
			continue
		}
		reqs = append(reqs, *r.DeepCopy())
	}
	itReq := karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)
	itReq.MinValues = itMin
	reqs = append(reqs, itReq,
		karpv1.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, sortedKeys(zones)...),
		karpv1.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, sortedKeys(capTypes)...),
	)
	// Carry the pods' requirements on labels that do not come from instance types (e.g. template labels).
	for _, r := range c.term {
		if !c.pool.itKeys[r.Key] && r.Key != karpv1.NodePoolLabelKey && !hasRequirement(reqs, r) {
			reqs = append(reqs, karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: *r.DeepCopy()})
		}
	}
	return NewNodeClaim{NodePool: c.pool.np, InstanceTypes: types, Requirements: reqs, Requests: c.requests, Pods: c.pods}
}

func hasRequirement(reqs []karpv1.NodeSelectorRequirementWithMinValues, r corev1.NodeSelectorRequirement) bool {
	for _, x := range reqs {
		if x.Key == r.Key {
			return true
		}
	}
	return false
}

func minPrice(o option) float64 {
	p := math.Inf(1)
	for _, off := range o.offerings {
		p = math.Min(p, off.Price)
	}
	return p
}

func maxCapacity(opts []option) corev1.ResourceList {
	out := corev1.ResourceList{ResourceNodes: resource.MustParse("1")}
	for _, o := range opts {
		for name, q := range o.it.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

func cmpQuantity(a, b corev1.ResourceList, name corev1.ResourceName) int {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
