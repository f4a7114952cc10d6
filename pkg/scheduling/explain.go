package scheduling

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Explanation says why a pending pod can or cannot get capacity: what a full solve decides for it, how the
// existing nodes judge it, and, NodePool by NodePool, which constraint removed which instance types and offerings
// and what change would let it schedule.
type Explanation struct {
	Pod string `json:"pod"`
	// Requests are the pod's effective requests (containers, init containers, sidecars, overhead).
	Requests corev1.ResourceList `json:"requests"`
	// Outcome is what Solve decides for the pod with every other pending pod of the snapshot.
	Outcome Outcome `json:"outcome"`
	// Existing summarises the existing nodes and in-flight NodeClaims, the pod considered alone.
	Existing ExistingNodes `json:"existingNodes"`
	// NodePools analyse a new node from each NodePool (highest weight first), the pod considered alone.
	NodePools []PoolExplanation `json:"nodePools"`
}

// Outcome kinds.
const (
	OutcomeExistingNode  = "ExistingNode"
	OutcomeNewNode       = "NewNode"
	OutcomeUnschedulable = "Unschedulable"
)

// Outcome is the pod's fate in a full solve.
type Outcome struct {
	// Kind is ExistingNode, NewNode or Unschedulable.
	Kind         string     `json:"kind"`
	Node         string     `json:"node,omitempty"`
	NodePool     string     `json:"nodePool,omitempty"`
	InstanceType string     `json:"instanceType,omitempty"`
	Zone         string     `json:"zone,omitempty"`
	CapacityType string     `json:"capacityType,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	Code         ReasonCode `json:"code,omitempty"`
}

// ExistingNodes summarises how existing nodes and in-flight NodeClaims judge the pod.
type ExistingNodes struct {
	// Nodes is how many were considered (nodes marked for deletion are not).
	Nodes int `json:"nodes"`
	// Accepting names nodes that would take the pod now (at most 10).
	Accepting []string `json:"accepting,omitempty"`
	// Rejected is how many refused it; Reasons counts why, most common first.
	Rejected int           `json:"rejected"`
	Reasons  []ReasonCount `json:"reasons,omitempty"`
}

// ReasonCount is one reason existing nodes gave, with how many gave it and an example node.
type ReasonCount struct {
	Code    ReasonCode `json:"code"`
	Reason  string     `json:"reason"`
	Count   int        `json:"count"`
	Example string     `json:"example"`
}

// PoolExplanation is the analysis of one NodePool for the pod.
type PoolExplanation struct {
	NodePool string `json:"nodePool"`
	Weight   int32  `json:"weight"`
	// InstanceTypes is how many instance types the NodePool was given before any filtering.
	InstanceTypes int `json:"instanceTypes"`
	// Fits says a new node of this NodePool would take the pod.
	Fits bool `json:"fits"`
	// Code, Reason and Fix describe the stage that removed the last candidate (empty when Fits).
	Code   ReasonCode `json:"code,omitempty"`
	Reason string     `json:"reason,omitempty"`
	Fix    string     `json:"fix,omitempty"`
	// Stages are the filters in the order applied.
	Stages []Stage `json:"stages"`
	// Cheapest is the cheapest launch option when Fits.
	Cheapest *InstanceTypeOption `json:"cheapest,omitempty"`
}

// Stage names, in the order the analysis applies them.
const (
	StageTaints               = "Taints"
	StageNodePoolRequirements = "NodePoolRequirements"
	StagePodRequirements      = "PodRequirements"
	StageVolumes              = "VolumeTopology"
	StageResources            = "Resources"
	StageOfferings            = "Offerings"
	StageLimits               = "Limits"
	StageMinValues            = "MinValues"
	StageTopology             = "Topology"
)

// Stage is one filter of a NodePool analysis.
type Stage struct {
	Name string     `json:"name"`
	Code ReasonCode `json:"code"`
	// Before and After count the instance types entering and surviving the stage.
	Before int `json:"before"`
	After  int `json:"after"`
	// Removed names up to 10 instance types the stage removed (RemovedCount counts them all).
	Removed      []string `json:"removed,omitempty"`
	RemovedCount int      `json:"removedCount"`
	// Offerings lists offerings (zone/capacity-type) the stage excluded, with why, for the Offerings stage.
	Offerings []string `json:"offerings,omitempty"`
	Detail    string   `json:"detail,omitempty"`
	Fix       string   `json:"fix,omitempty"`
	// Blocking marks the stage that left nothing.
	Blocking bool `json:"blocking,omitempty"`
}

const maxExamples = 10

// Explain analyses why the pending pod key can or cannot be placed. It solves the whole snapshot once for the
// pod's outcome, then examines the pod alone (no other pending pod) against every existing node and every NodePool.
// It is separate from Solve and costs nothing there.
func Explain(ctx context.Context, snap *Snapshot, key types.NamespacedName, opts Options) (*Explanation, error) {
	if snap == nil {
		return nil, fmt.Errorf("nil snapshot")
	}
	var pod *corev1.Pod
	for _, p := range snap.Pods {
		if p != nil && p.Namespace == key.Namespace && p.Name == key.Name {
			pod = p
			break
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s is not among the snapshot's pending pods", key)
	}
	if opts.MaxInstanceTypes <= 0 {
		opts.MaxInstanceTypes = 60
	}
	plan, err := Solve(ctx, snap, opts)
	if err != nil {
		return nil, err
	}
	out := &Explanation{Pod: key.String(), Requests: PodRequests(pod), Outcome: outcomeOf(plan, key)}
	if err := explainAlone(ctx, snap, pod, opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ExplainClaims is the ResourceClaims stage of Explain's NodePool analyses for the pending pod key, by NodePool
// name (a NodePool whose analysis stops before that stage is left out; none for a pod without claims). It does
// not solve the whole snapshot, so it is cheap enough to explain every claim pod a plan leaves unschedulable.
func ExplainClaims(ctx context.Context, snap *Snapshot, key types.NamespacedName, opts Options) (map[string]Stage, error) {
	var pod *corev1.Pod
	for _, p := range snap.Pods {
		if p != nil && p.Namespace == key.Namespace && p.Name == key.Name {
			pod = p
			break
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s is not among the snapshot's pending pods", key)
	}
	if snap.DRA == nil || len(pod.Spec.ResourceClaims) == 0 {
		return nil, nil
	}
	if opts.MaxInstanceTypes <= 0 {
		opts.MaxInstanceTypes = 60
	}
	e := &Explanation{}
	if err := explainAlone(ctx, snap, pod, opts, e); err != nil {
		return nil, err
	}
	out := map[string]Stage{}
	for _, p := range e.NodePools {
		for _, st := range p.Stages {
			if st.Name == StageResourceClaims {
				out[p.NodePool] = st
			}
		}
	}
	return out, nil
}

// explainAlone fills out's Existing and NodePools: the pod considered alone (no other pending pod) against every
// existing node and every NodePool.
func explainAlone(ctx context.Context, snap *Snapshot, pod *corev1.Pod, opts Options, out *Explanation) error {
	alone := *snap
	alone.Pods = []*corev1.Pod{pod}
	prepared, claims, err := explainClaims(ctx, withDefaultSpread(&alone), pod)
	if err != nil {
		return err
	}
	s := newSolver(ctx, prepared, opts)
	s.claimInfo = claims
	if err := s.prepare(); err != nil {
		return err
	}
	c := s.classes[0]
	for s.relax(c) {
	}
	out.Existing = s.explainExisting(c)
	for _, p := range s.pools {
		out.NodePools = append(out.NodePools, s.analyzePool(c, p))
	}
	if claims != nil {
		for i := range out.Existing.Reasons {
			out.Existing.Reasons[i].Reason = claims.rename(out.Existing.Reasons[i].Reason)
		}
		for i := range out.NodePools {
			np := &out.NodePools[i]
			np.Reason, np.Fix = claims.rename(np.Reason), claims.rename(np.Fix)
			for j := range np.Stages {
				np.Stages[j].Detail, np.Stages[j].Fix = claims.rename(np.Stages[j].Detail), claims.rename(np.Stages[j].Fix)
			}
		}
	}
	return nil
}

func outcomeOf(plan *Plan, key types.NamespacedName) Outcome {
	for _, pl := range plan.Placements {
		if pl.Pod == key {
			return Outcome{Kind: OutcomeExistingNode, Node: pl.Node}
		}
	}
	for _, nc := range plan.NodeClaims {
		for _, p := range nc.Pods {
			if p == key {
				return Outcome{Kind: OutcomeNewNode, NodePool: nc.NodePool, InstanceType: nc.InstanceType, Zone: nc.Zone,
					CapacityType: nc.CapacityType}
			}
		}
	}
	for _, u := range plan.Unschedulable {
		if u.Pod == key {
			return Outcome{Kind: OutcomeUnschedulable, Reason: u.Reason, Code: u.Code}
		}
	}
	return Outcome{Kind: OutcomeUnschedulable, Reason: "not in the plan"}
}

// explainExisting asks every existing node and in-flight NodeClaim whether it takes one pod of c.
func (s *solver) explainExisting(c *class) ExistingNodes {
	out := ExistingNodes{Nodes: len(s.existing)}
	byReason := map[string]*ReasonCount{}
	for _, n := range s.existing {
		code, why := s.existingVerdict(c, n)
		if why == "" {
			if len(out.Accepting) < maxExamples {
				out.Accepting = append(out.Accepting, n.name)
			}
			continue
		}
		out.Rejected++
		rc, ok := byReason[why]
		if !ok {
			rc = &ReasonCount{Code: code, Reason: why, Example: n.name}
			byReason[why] = rc
		}
		rc.Count++
	}
	for _, rc := range byReason {
		out.Reasons = append(out.Reasons, *rc)
	}
	sort.Slice(out.Reasons, func(i, j int) bool {
		if out.Reasons[i].Count != out.Reasons[j].Count {
			return out.Reasons[i].Count > out.Reasons[j].Count
		}
		return out.Reasons[i].Reason < out.Reasons[j].Reason
	})
	return out
}

func (s *solver) existingVerdict(c *class, n *candidate) (ReasonCode, string) {
	if c.err != "" {
		return s.classErrCode(c), c.err
	}
	a := s.tryExisting(c, n)
	if a.ok {
		return "", ""
	}
	if a.topo.set {
		return topoCode(&a.topo), a.topo.String()
	}
	switch {
	case strings.HasPrefix(a.reason, "taint "):
		return ReasonTaints, "does not tolerate " + a.reason
	case a.reason == "resources":
		for i := range c.req {
			if n.used[i]+c.req[i] > n.alloc[i] {
				return ReasonResources, fmt.Sprintf("insufficient %s", s.dims.Name(i))
			}
		}
		return ReasonResources, "insufficient resources"
	case a.reason == "host port conflict":
		return ReasonHostPorts, a.reason
	case a.reason == "volume attach limit":
		return ReasonVolumes, a.reason
	case a.reason == "hostname":
		return ReasonRequirements, "requirement " + c.cur.reqs[labelHostname].String()
	default:
		return ReasonRequirements, a.reason
	}
}

func topoCode(f *topoFailure) ReasonCode {
	if f.g != nil && f.g.kind == kindSpread {
		return ReasonTopologySpread
	}
	return ReasonPodAffinity
}

// classErrCode classifies a class whose pods are unschedulable before any node is tried.
func (s *solver) classErrCode(c *class) ReasonCode {
	if len(c.pods) > 0 {
		if _, _, verr := s.podVolumes(c.pods[0].pod); verr != "" {
			return ReasonVolumes
		}
	}
	return ReasonRequirements
}

// poolRun is the state of one NodePool analysis as its stages filter instance types.
type poolRun struct {
	s    *solver
	p    *poolInfo
	out  PoolExplanation
	left []*itInfo
	// removed are the types the last stage removed.
	removed []*itInfo
}

func (r *poolRun) stage(name string, code ReasonCode, keep func(t *itInfo) bool) (removed []*itInfo) {
	st := Stage{Name: name, Code: code, Before: len(r.left)}
	kept := make([]*itInfo, 0, len(r.left))
	for _, t := range r.left {
		if keep(t) {
			kept = append(kept, t)
			continue
		}
		removed = append(removed, t)
		if len(st.Removed) < maxExamples {
			st.Removed = append(st.Removed, t.name)
		}
	}
	st.RemovedCount = len(removed)
	st.After = len(kept)
	r.left, r.removed = kept, removed
	r.out.Stages = append(r.out.Stages, st)
	return removed
}

func (r *poolRun) last() *Stage { return &r.out.Stages[len(r.out.Stages)-1] }

// block marks the last stage blocking (adding it first when name differs) and records the verdict.
func (r *poolRun) block(name string, code ReasonCode, reason, fix string) PoolExplanation {
	if len(r.out.Stages) == 0 || r.last().Name != name {
		r.out.Stages = append(r.out.Stages, Stage{Name: name, Code: code, Before: len(r.left), RemovedCount: len(r.left)})
		for _, t := range r.left {
			if len(r.last().Removed) < maxExamples {
				r.last().Removed = append(r.last().Removed, t.name)
			}
		}
	}
	st := r.last()
	st.Blocking, st.Code, st.After = true, code, 0
	if st.Detail == "" {
		st.Detail = reason
	}
	st.Fix = fix
	r.out.Code, r.out.Reason, r.out.Fix = code, reason, fix
	return r.out
}

// analyzePool runs the stages for one pod of c against a new node of p. It tries each required node affinity
// term and keeps the one that gets furthest.
func (s *solver) analyzePool(c *class, p *poolInfo) PoolExplanation {
	pod := c.pods[0].pod
	terms, err := requiredTerms(pod)
	if err != nil {
		r := &poolRun{s: s, p: p, out: PoolExplanation{NodePool: p.np.Name, Weight: p.np.Weight, InstanceTypes: len(p.types)}, left: p.types}
		return r.block(StagePodRequirements, ReasonRequirements, err.Error(), "fix the pod's node affinity")
	}
	var best PoolExplanation
	for i, term := range terms {
		got := s.analyzePoolTerm(c, p, pod, term)
		if i == 0 || got.Fits || progress(got) > progress(best) {
			best = got
		}
		if got.Fits {
			break
		}
	}
	return best
}

func progress(e PoolExplanation) int {
	if e.Fits {
		return 1 << 20
	}
	return len(e.Stages)
}

func (s *solver) analyzePoolTerm(c *class, p *poolInfo, pod *corev1.Pod, podReqs Requirements) PoolExplanation {
	name := p.np.Name
	r := &poolRun{s: s, p: p, out: PoolExplanation{NodePool: name, Weight: p.np.Weight, InstanceTypes: len(p.types)}, left: p.types}

	// taints
	var untol []string
	var fixes []string
	for i := range p.taints {
		t := &p.taints[i]
		if untolerated([]corev1.Taint{*t}, c.tolerations) != nil {
			untol = append(untol, taintString(t))
			fixes = append(fixes, "add a toleration for "+taintString(t))
		}
	}
	r.stage(StageTaints, ReasonTaints, func(*itInfo) bool { return len(untol) == 0 })
	if len(untol) > 0 {
		return r.block(StageTaints, ReasonTaints, "pod does not tolerate taint "+strings.Join(untol, ", "), strings.Join(fixes, "; ")+" to the pod")
	}
	if len(p.types) == 0 {
		return r.block(StageNodePoolRequirements, ReasonOfferings, fmt.Sprintf("NodePool %s has no instance types", name),
			fmt.Sprintf("check NodePool %s's node class is ready and its instance types resolve", name))
	}

	// the NodePool's own requirements
	poolF := p.filterFor(p.reqs)
	poolBy := map[string]int{}
	r.stage(StageNodePoolRequirements, ReasonRequirements, func(t *itInfo) bool {
		k := poolF.mismatch(t)
		if k != "" {
			poolBy[k]++
		}
		return k == ""
	})
	r.last().Detail = fmt.Sprintf("NodePool %s's requirements allow %d of %d instance types%s", name, len(r.left), len(p.types), byKeyText(poolBy))
	if len(r.left) == 0 {
		return r.block(StageNodePoolRequirements, ReasonRequirements, fmt.Sprintf("NodePool %s's requirements allow no instance type", name),
			fmt.Sprintf("loosen NodePool %s's requirements", name))
	}

	// the pod's nodeSelector and required node affinity
	merged := p.reqs.Copy()
	for _, k := range podReqs.Keys() {
		pr := podReqs[k]
		if have, ok := p.reqs[k]; ok {
			m := have.Intersect(pr)
			if !m.Satisfiable() || (!m.HasValues() && !have.AllowAbsent) {
				r.stage(StagePodRequirements, ReasonRequirements, func(*itInfo) bool { return false })
				reason, fix := s.conflictText(p, k, pr, have)
				return r.block(StagePodRequirements, ReasonRequirements, reason, fix)
			}
			merged[k] = m
			continue
		}
		if (p.typeKeys[k] && k != labelHostname) || p.launchKeys[k] {
			merged[k] = pr
			continue
		}
		if !pr.AllowAbsent {
			r.stage(StagePodRequirements, ReasonRequirements, func(*itInfo) bool { return false })
			reason := fmt.Sprintf("requirement %s: NodePool %s does not set label %s", pr, name, k)
			fix := fmt.Sprintf("add the label to NodePool %s's template labels or requirements, or drop it from the pod's nodeSelector/affinity", name)
			if vs := pr.Values(); len(vs) == 1 {
				fix = fmt.Sprintf("add label %s=%s to NodePool %s's template labels", k, vs[0], name)
			}
			if k == labelHostname {
				reason = fmt.Sprintf("requirement %s: a new node cannot have that hostname", pr)
				fix = "only an existing node can take the pod: free room on it, or drop the hostname from the pod's nodeSelector/affinity"
			}
			return r.block(StagePodRequirements, ReasonRequirements, reason, fix)
		}
	}
	podF := p.filterFor(podReqs)
	byKey := map[string]int{}
	r.stage(StagePodRequirements, ReasonRequirements, func(t *itInfo) bool {
		k := podF.mismatch(t)
		if k != "" {
			byKey[k]++
		}
		return k == ""
	})
	narrowed := r.last().RemovedCount > 0
	if len(podReqs) > 0 {
		r.last().Detail = "pod requires " + podReqs.String() + byKeyText(byKey)
	}
	if len(r.left) == 0 {
		keys := sortedKeys(byKey)
		var parts []string
		for _, k := range keys {
			parts = append(parts, podReqs[k].String())
		}
		reason := fmt.Sprintf("no instance type allowed by NodePool %s satisfies %s", name, strings.Join(parts, ", "))
		cands := s.typesWhere(p, func(t *itInfo) bool { return podF.mismatch(t) == "" })
		fix := s.allowFix(p, cands)
		if fix == "" {
			fix = fmt.Sprintf("no instance type offered to NodePool %s satisfies %s: change the pod's nodeSelector/affinity", name, strings.Join(parts, ", "))
		}
		return r.block(StagePodRequirements, ReasonRequirements, reason, fix)
	}

	// volume topology
	volReqs, _, verr := s.podVolumes(pod)
	if verr != "" {
		return r.block(StageVolumes, ReasonVolumes, verr, "create or bind the pod's volume claims")
	}
	volF := p.filterFor(volReqs)
	if len(volReqs) > 0 {
		for _, k := range volReqs.Keys() {
			vr := volReqs[k]
			have, ok := merged[k]
			if !ok {
				if !p.typeKeys[k] && !vr.AllowAbsent {
					return r.block(StageVolumes, ReasonVolumes, fmt.Sprintf("the pod's volumes need %s; NodePool %s does not set label %s", vr, name, k),
						fmt.Sprintf("add label %s to NodePool %s's template labels", k, name))
				}
				merged[k] = vr
				continue
			}
			m := have.Intersect(vr)
			if !m.Satisfiable() || (!m.HasValues() && !have.AllowAbsent) {
				reason := fmt.Sprintf("the pod's volumes need %s; NodePool %s with the pod's requirements allows %s", vr, name, have)
				fix := "the pod's node affinity and its volumes disagree: change the affinity or move the volume"
				if pr, ok := p.reqs[k]; ok && !pr.Intersect(vr).HasValues() {
					fix = fmt.Sprintf("allow %s %s in NodePool %s's requirements (the pod's volume is there)", keyName(k), strings.Join(vr.Values(), ", "), name)
				}
				return r.block(StageVolumes, ReasonVolumes, reason, fix)
			}
			merged[k] = m
		}
		r.stage(StageVolumes, ReasonVolumes, func(t *itInfo) bool { return volF.mismatch(t) == "" })
		r.last().Detail = "the pod's volumes need " + volReqs.String()
		if len(r.left) == 0 {
			return r.block(StageVolumes, ReasonVolumes, fmt.Sprintf("no instance type allowed by NodePool %s satisfies the volumes' %s", name, volReqs),
				"move the volume or allow matching instance types in the NodePool")
		}
	}

	// resource claims: the devices of the type's model
	if ci := s.claimInfo; ci != nil {
		if ci.why != "" {
			return r.block(StageResourceClaims, ReasonResources, ci.why, "create the pod's ResourceClaimTemplates and ResourceClaims, or wait for the claim it shares")
		}
		if ci.need != nil {
			removed := r.stage(StageResourceClaims, ReasonResources, ci.offers)
			r.last().Detail = "the pod's claims: " + ci.need.shape.names
			if len(removed) > 0 {
				r.last().Detail += "; " + ci.removedWhy(removed)
			}
			if len(r.left) == 0 {
				return r.block(StageResourceClaims, ReasonResources,
					fmt.Sprintf("no instance type allowed by NodePool %s has devices for resource claims %s", name, ci.need.shape.names),
					fmt.Sprintf("allow instance types with the devices in NodePool %s, enable their device models (AWS_FEATURE_GATES DRANVIDIAGPU, DRAEFA) or describe them in the dovetail-dra-device-models ConfigMap, or loosen the claims' selectors", name))
			}
		}
	}

	// resources (allocatable after kubelet reserved, eviction thresholds and DaemonSet overhead)
	maxAvl := s.dims.Zero()
	for _, t := range r.left {
		maxAvl.MaxInto(t.avail)
	}
	r.stage(StageResources, ReasonResources, func(t *itInfo) bool { return nonNegative(t.avail) && c.req.LessEq(t.avail) })
	r.last().Detail = fmt.Sprintf("pod requests %s (allocatable after kubelet reserved, eviction thresholds and DaemonSet overhead)", s.dims.Format(c.req))
	if len(r.left) == 0 {
		reason := fmt.Sprintf("no instance type allowed by NodePool %s fits requests %s", name, s.dims.Format(c.req))
		for i := range c.req {
			if c.req[i] <= maxAvl[i] {
				continue
			}
			what := "largest instance type allowed"
			if narrowed {
				what += " with the pod's requirements"
			}
			if maxAvl[i] == 0 && i >= numFixedDims {
				reason = fmt.Sprintf("requests %s %s; no instance type allowed by NodePool %s has %s", s.dims.FormatValue(i, c.req[i]), s.dims.Name(i), name, s.dims.Name(i))
			} else {
				reason = fmt.Sprintf("requests %s %s; %s by NodePool %s has %s", s.dims.FormatValue(i, c.req[i]), s.dims.Name(i), what, name, s.dims.FormatValue(i, maxAvl[i]))
			}
			break
		}
		cands := s.typesWhere(p, func(t *itInfo) bool {
			return podF.mismatch(t) == "" && volF.mismatch(t) == "" && nonNegative(t.avail) && c.req.LessEq(t.avail)
		})
		fix := s.allowFix(p, cands)
		if fix == "" {
			all := s.dims.Zero()
			for _, t := range p.types {
				all.MaxInto(t.avail)
			}
			fix = fmt.Sprintf("lower the pod's requests: no instance type offered to NodePool %s fits them (the most any has: %s)", name, s.dims.Format(all))
		}
		return r.block(StageResources, ReasonResources, reason, fix)
	}

	// offerings: zones, capacity types, availability
	zr, ct := merged[labelZone], merged[labelCapacityType]
	excluded := map[string]string{}
	r.stage(StageOfferings, ReasonOfferings, func(t *itInfo) bool {
		ok := false
		for _, o := range t.it.Offerings {
			zoneOK, ctOK := zr == nil || zr.Has(o.Zone), ct == nil || ct.Has(o.CapacityType)
			switch {
			case zoneOK && ctOK && o.Available:
				ok = true
			case zoneOK && ctOK:
				excluded[o.Zone+"/"+o.CapacityType] = "unavailable (insufficient capacity)"
			case !zoneOK:
				if _, seen := excluded[o.Zone+"/"+o.CapacityType]; !seen {
					excluded[o.Zone+"/"+o.CapacityType] = "zone not allowed"
				}
			default:
				if _, seen := excluded[o.Zone+"/"+o.CapacityType]; !seen {
					excluded[o.Zone+"/"+o.CapacityType] = "capacity type not allowed"
				}
			}
		}
		return ok
	})
	st := r.last()
	for _, k := range sortedKeys(excluded) {
		st.Offerings = append(st.Offerings, k+": "+excluded[k])
	}
	var allowed []string
	if zr != nil {
		allowed = append(allowed, "zones "+reqValues(zr))
	}
	if ct != nil {
		allowed = append(allowed, "capacity types "+reqValues(ct))
	}
	if len(allowed) > 0 {
		st.Detail = "allowed " + strings.Join(allowed, ", ")
	}
	if len(r.left) == 0 {
		removed := r.removed
		unavailable, zones, cts := false, map[string]bool{}, map[string]bool{}
		for _, t := range removed {
			for _, o := range t.it.Offerings {
				if (zr == nil || zr.Has(o.Zone)) && (ct == nil || ct.Has(o.CapacityType)) && !o.Available {
					unavailable = true
				}
				if o.Available {
					zones[o.Zone], cts[o.CapacityType] = true, true
				}
			}
		}
		var reason, fix string
		switch {
		case unavailable:
			reason = fmt.Sprintf("every offering of the instance types that fit in NodePool %s's allowed %s is unavailable (insufficient capacity)", name, strings.Join(allowed, ", "))
			fix = fmt.Sprintf("wait for capacity, or allow more zones, capacity types or instance types in NodePool %s", name)
		default:
			if volZ := volReqs[labelZone]; volZ != nil {
				var elsewhere []string
				for _, z := range sortedKeys(zones) {
					if allows(p.reqs[labelZone], z) && allows(podReqs[labelZone], z) {
						elsewhere = append(elsewhere, z)
					}
				}
				if len(elsewhere) > 0 {
					return r.block(StageOfferings, ReasonVolumes,
						fmt.Sprintf("the pod's volumes need zone %s, where NodePool %s offers no instance type that fits (they are offered in %s)", reqValues(volZ), name, strings.Join(elsewhere, ", ")),
						"move the volume to a zone the fitting instance types are offered in, or allow instance types offered in its zone")
				}
			}
			reason = fmt.Sprintf("no instance type satisfies NodePool %s's allowed %s: the ones that fit are offered elsewhere", name, strings.Join(allowed, ", "))
			fix = offeringsFix(name, zones, cts, p.reqs, podReqs)
		}
		return r.block(StageOfferings, ReasonOfferings, reason, fix)
	}

	// limits
	if p.limNodes >= 0 && p.nodes+1 > p.limNodes {
		return r.block(StageLimits, ReasonLimits, fmt.Sprintf("limit of %d nodes reached", p.limNodes),
			fmt.Sprintf("raise NodePool %s's limit nodes from %d to at least %d", name, p.limNodes, p.nodes+1))
	}
	r.stage(StageLimits, ReasonLimits, func(t *itInfo) bool { return s.fitsPoolLimits(p, t) })
	if len(r.left) == 0 {
		var lims, raises []string
		for i, lim := range p.limited {
			if !lim {
				continue
			}
			minCap := int64(-1)
			for _, t := range r.removed {
				if minCap < 0 || t.capacity[i] < minCap {
					minCap = t.capacity[i]
				}
			}
			lims = append(lims, fmt.Sprintf("%s %s of %s in use", s.dims.Name(i), s.dims.FormatValue(i, p.used[i]), s.dims.FormatValue(i, p.limits[i])))
			if minCap >= 0 && p.used[i]+minCap > p.limits[i] {
				raises = append(raises, fmt.Sprintf("raise NodePool %s's limit %s from %s to at least %s", name, s.dims.Name(i),
					s.dims.FormatValue(i, p.limits[i]), s.dims.FormatValue(i, p.used[i]+minCap)))
			}
		}
		fix := strings.Join(raises, " and ")
		if fix == "" {
			fix = fmt.Sprintf("raise NodePool %s's limits", name)
		}
		return r.block(StageLimits, ReasonLimits, fmt.Sprintf("every instance type that fits would exceed NodePool %s's limits (%s)", name, strings.Join(lims, ", ")), fix)
	}

	// minValues
	if len(p.minVals) > 0 && s.opts.MinValuesPolicy != MinValuesPolicyBest {
		var opts []sigOpt
		for _, t := range r.left {
			if o, ok := cheapestOffering(t, merged); ok {
				opts = append(opts, sigOpt{t: t, price: o.Price, offer: o})
			}
		}
		if k, have, want := minValuesShort(p, merged, opts, nil); k != "" {
			r.stage(StageMinValues, ReasonRequirements, func(*itInfo) bool { return false })
			return r.block(StageMinValues, ReasonRequirements,
				fmt.Sprintf("minValues: %s needs %d distinct values, the instance types that fit allow %d", k, want, have),
				fmt.Sprintf("lower minValues for %s in NodePool %s, or relax the pod's requirements and requests", k, name))
		}
	}

	// topology spread, pod affinity and anti-affinity, host ports: try the pod on a fresh node
	base := s.sigFor(p, p.reqs)
	if base.err == "" {
		nr := s.narrow(base, c.cur)
		if nr.sig != nil && len(nr.sig.opts) > 0 {
			n := &candidate{idx: len(s.nodes), name: name + "-explain", sig: nr.sig, used: s.dims.Zero()}
			ptr := -1
			for i, o := range nr.sig.opts {
				if c.req.LessEq(o.t.avail) && s.fitsPoolLimits(p, o.t) {
					ptr = i
					break
				}
			}
			if ptr >= 0 {
				n.ptr, n.cost = ptr, nr.sig.opts[ptr].price
				p.used.Add(nr.sig.opts[ptr].t.capacity)
				a := s.try(c, n, true)
				p.used.Sub(nr.sig.opts[ptr].t.capacity)
				if !a.ok && a.topo.set {
					code := topoCode(&a.topo)
					r.stage(StageTopology, code, func(*itInfo) bool { return false })
					return r.block(StageTopology, code, a.topo.String(), topoFix(&a.topo, name))
				}
				if !a.ok && a.reason == "host port conflict" {
					return r.block(StageTopology, ReasonHostPorts, a.reason, "use another host port")
				}
				if a.ok {
					o := a.sig.opts[a.ptr]
					r.out.Fits = true
					r.out.Cheapest = &InstanceTypeOption{Name: o.t.name, Zone: o.offer.Zone, CapacityType: o.offer.CapacityType, Price: o.price}
					return r.out
				}
			}
		}
	}
	// the stages found a candidate the solver's own check does not accept: report the solver's view
	if why := s.solverView(c, p); why != "" {
		return r.block(StageTopology, ReasonOther, why, "")
	}
	r.out.Fits = true
	return r.out
}

// solverView is the solver's own short reason for p refusing c (used when the stages found nothing).
func (s *solver) solverView(c *class, p *poolInfo) string {
	base := s.sigFor(p, p.reqs)
	if base.err != "" {
		return base.err
	}
	nr := s.narrow(base, c.cur)
	if nr.sig == nil {
		return nr.reason
	}
	return ""
}

func topoFix(f *topoFailure, pool string) string {
	switch {
	case f.missing:
		return fmt.Sprintf("NodePool %s's nodes have no %s label: add it to the NodePool's template labels or requirements", pool, f.g.key)
	case f.noType:
		return fmt.Sprintf("allow instance types in %s=%s in NodePool %s", f.key, f.value, pool)
	case f.g.kind == kindSpread:
		return fmt.Sprintf("allow more %s domains in NodePool %s, raise maxSkew, or use whenUnsatisfiable: ScheduleAnyway", keyName(f.g.key), pool)
	case f.g.kind == kindAffinity:
		return "run the pods the affinity selects in a domain NodePool " + pool + " can launch into, or relax the affinity"
	default:
		return fmt.Sprintf("allow more %s domains in NodePool %s, or relax the anti-affinity", keyName(f.g.key), pool)
	}
}

// typeFilter checks instance-type labels against the requirement keys that concern instance types (zone and
// capacity type are checked against offerings elsewhere; keys the NodePool sets on the node itself do not concern
// instance types). Keys are resolved once so filtering hundreds of types does not sort per type.
type typeFilter struct {
	keys []string
	reqs []*Requirement
	// launch marks the keys whose values the launch chooses (InstanceType.LaunchLabels).
	launch []bool
}

func (p *poolInfo) filterFor(reqs Requirements) typeFilter {
	var f typeFilter
	for _, k := range reqs.Keys() {
		if p.launchKeys[k] {
			f.keys = append(f.keys, k)
			f.reqs = append(f.reqs, reqs[k])
			f.launch = append(f.launch, true)
			continue
		}
		if k == labelZone || k == labelCapacityType || !p.typeKeys[k] || p.nodeKeys[k] {
			continue
		}
		f.keys = append(f.keys, k)
		f.reqs = append(f.reqs, reqs[k])
		f.launch = append(f.launch, false)
	}
	return f
}

// mismatch returns the first key whose requirement t's labels fail, or "".
func (f typeFilter) mismatch(t *itInfo) string {
	for i, k := range f.keys {
		if f.launch[i] {
			if !launchAllows(t, k, f.reqs[i]) {
				return k
			}
			continue
		}
		v, ok := t.labels[k]
		if !f.reqs[i].Matches(v, ok) {
			return k
		}
	}
	return ""
}

func (s *solver) typesWhere(p *poolInfo, f func(t *itInfo) bool) []*itInfo {
	var out []*itInfo
	for _, t := range p.types {
		if f(t) {
			out = append(out, t)
		}
	}
	return out
}

// allowFix suggests which values to allow in p's requirements so that some of cands (types the pod could use)
// pass them, starting from the cheapest candidate. It returns "" when no candidate exists or none is excluded by
// the NodePool's requirements.
func (s *solver) allowFix(p *poolInfo, cands []*itInfo) string {
	type cand struct {
		t     *itInfo
		price float64
	}
	var cs []cand
	poolF := p.filterFor(p.reqs)
	for _, t := range cands {
		if poolF.mismatch(t) == "" {
			continue // allowed already: something else removed it
		}
		price := -1.0
		for _, o := range t.it.Offerings {
			if o.Available && (price < 0 || o.Price < price) {
				price = o.Price
			}
		}
		if price < 0 {
			continue
		}
		cs = append(cs, cand{t, price})
	}
	if len(cs) == 0 {
		return ""
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].price != cs[j].price {
			return cs[i].price < cs[j].price
		}
		return cs[i].t.name < cs[j].t.name
	})
	first := cs[0].t
	var parts []string
	for _, k := range p.reqs.Keys() {
		req := p.reqs[k]
		if k == labelZone || k == labelCapacityType || !p.typeKeys[k] || p.nodeKeys[k] {
			continue
		}
		v, ok := first.labels[k]
		if req.Matches(v, ok) {
			continue
		}
		vals := []string{v}
		for _, c := range cs[1:] {
			if len(vals) >= 3 {
				break
			}
			cv, ok := c.t.labels[k]
			if ok && !req.Has(cv) && !contains(vals, cv) {
				vals = append(vals, cv)
			}
		}
		txt := keyName(k) + " " + vals[0]
		if len(vals) > 1 {
			txt += " (or " + strings.Join(vals[1:], ", ") + ")"
		}
		if !ok {
			txt = "instance types without label " + k
		}
		parts = append(parts, txt)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("allow %s in NodePool %s's requirements (e.g. %s)", strings.Join(parts, " and "), p.np.Name, first.name)
}

func (s *solver) conflictText(p *poolInfo, k string, pod, have *Requirement) (string, string) {
	name := p.np.Name
	switch {
	case k == labelNodePool:
		return fmt.Sprintf("pod requires %s", pod), fmt.Sprintf("the pod selects another NodePool; remove its %s selector to use %s", labelNodePool, name)
	case p.np.Labels[k] != "":
		return fmt.Sprintf("pod requires %s; NodePool %s's template sets %s=%s", pod, name, k, p.np.Labels[k]),
			fmt.Sprintf("change the pod's nodeSelector/affinity on %s, or use a NodePool whose template sets it", k)
	case k == labelZone:
		return fmt.Sprintf("no zone satisfies both the pod's zone requirement %s and NodePool %s's zones %s", reqValues(pod), name, reqValues(have)),
			fmt.Sprintf("allow zone %s in NodePool %s's requirements, or change the pod's zone affinity", reqValues(pod), name)
	}
	reason := fmt.Sprintf("pod requires %s; NodePool %s allows %s", pod, name, have)
	fix := fmt.Sprintf("change the pod's nodeSelector/affinity on %s to match NodePool %s", k, name)
	if vs := pod.Values(); len(vs) > 0 {
		fix = fmt.Sprintf("allow %s %s in NodePool %s's requirements", keyName(k), strings.Join(vs, ", "), name)
	}
	return reason, fix
}

// allows reports whether r (nil: unrestricted) admits v.
func allows(r *Requirement, v string) bool { return r == nil || r.Has(v) }

// offeringsFix says who must allow which zones or capacity types the fitting instance types are offered in: the
// NodePool's requirements, or the pod's.
func offeringsFix(pool string, zones, cts map[string]bool, poolReqs, podReqs Requirements) string {
	var parts []string
	for _, d := range []struct {
		key, what string
		have      map[string]bool
	}{{labelZone, "zone", zones}, {labelCapacityType, "capacity type", cts}} {
		var byPool, byPod []string
		for _, v := range sortedKeys(d.have) {
			switch {
			case !allows(poolReqs[d.key], v):
				byPool = append(byPool, v)
			case !allows(podReqs[d.key], v):
				byPod = append(byPod, v)
			}
		}
		if len(byPool) > 0 {
			parts = append(parts, fmt.Sprintf("allow %s %s in NodePool %s's requirements", d.what, strings.Join(byPool, " or "), pool))
		}
		if len(byPod) > 0 {
			parts = append(parts, fmt.Sprintf("allow %s %s in the pod's node affinity", d.what, strings.Join(byPod, " or ")))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("allow more zones or capacity types in NodePool %s", pool)
	}
	return strings.Join(parts, ", or ") + " (where the instance types that fit are offered)"
}

func reqValues(r *Requirement) string {
	if r.Finite() {
		return "[" + strings.Join(r.Values(), ", ") + "]"
	}
	return r.String()
}

// byKeyText renders how many instance types each label key removed, most first: " (removed by key: a 3, b 1)".
func byKeyText(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	keys := sortedKeys(by)
	sort.SliceStable(keys, func(i, j int) bool { return by[keys[i]] > by[keys[j]] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return " (removed by key: " + strings.Join(parts, ", ") + ")"
}

// keyName renders well-known label keys as words for fix suggestions.
func keyName(k string) string {
	switch k {
	case labelInstanceType:
		return "instance type"
	case "karpenter.k8s.aws/instance-family":
		return "instance family"
	case "karpenter.k8s.aws/instance-category":
		return "instance category"
	case "karpenter.k8s.aws/instance-generation":
		return "instance generation"
	case "karpenter.k8s.aws/instance-size":
		return "instance size"
	case corev1.LabelArchStable:
		return "architecture"
	case corev1.LabelOSStable:
		return "operating system"
	case labelZone:
		return "zone"
	case labelCapacityType:
		return "capacity type"
	}
	return k
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
