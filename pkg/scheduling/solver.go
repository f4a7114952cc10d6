package scheduling

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Solve plans where the snapshot's pending pods go: onto existing nodes and in-flight NodeClaims first, then onto
// new NodeClaims from the NodePools (highest weight first), choosing instance types to keep the hourly price low.
// It never modifies the snapshot. The plan is deterministic for a given snapshot and options.
func Solve(ctx context.Context, snap *Snapshot, opts Options) (*Plan, error) {
	start := time.Now()
	if snap == nil {
		return nil, fmt.Errorf("nil snapshot")
	}
	if opts.MaxInstanceTypes <= 0 {
		opts.MaxInstanceTypes = 60
	}
	switch opts.Bound {
	case "":
		opts.Bound = BoundPattern
	case BoundPattern, BoundCovering, BoundNone:
	default:
		return nil, fmt.Errorf("unknown bound %q: want %s, %s or %s", opts.Bound, BoundPattern, BoundCovering, BoundNone)
	}
	if opts.LeastAllocated && len(snap.NodePools) > 0 {
		return nil, fmt.Errorf("least-allocated placement is for existing nodes only, but the snapshot has %d NodePools", len(snap.NodePools))
	}
	snap, claims, err := prepareDRA(ctx, withDefaultSpread(snap))
	if err != nil {
		return nil, err
	}
	s := newSolver(ctx, snap, opts)
	plan, err := s.solve()
	if err != nil {
		return nil, err
	}
	if err := claims.finish(plan); err != nil {
		return nil, err
	}
	plan.Duration = time.Since(start)
	if opts.Bound != BoundNone {
		start = time.Now()
		plan.LowerBound = s.lowerBound(opts.Bound == BoundPattern)
		switch {
		case plan.LowerBound > 0:
			plan.Ratio = plan.Cost / plan.LowerBound
		case plan.Cost == 0:
			plan.Ratio = 1
		}
		plan.BoundDuration = time.Since(start)
	}
	return plan, nil
}

// solve places the snapshot's pending pods and improves the plan.
func (s *solver) solve() (*Plan, error) {
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if err := s.placeClasses(); err != nil {
		return nil, err
	}
	s.retryAffinityFailures()
	s.improve()
	return s.plan(), nil
}

type narrowKey struct{ sig, cons int }

type pinKey struct {
	sig        int
	key, value string
}

type solver struct {
	ctx  context.Context
	snap *Snapshot
	opts Options
	dims *Dims

	pools       []*poolInfo
	daemonSets  []*dsInfo
	sigs        map[string]*sig
	sigList     []*sig
	narrowCache map[narrowKey]narrowResult
	pinCache    map[pinKey]*sig
	groups      []*group
	groupIDs    map[string]*group
	// antiOf holds the groups of each existing pod's required anti-affinity terms (prepareExisting).
	antiOf map[*corev1.Pod][]*group
	// labelSets numbers bound pods' label sets when the solve has no memo (labelSetOf; made on first use).
	labelSets     map[string]int32
	keyBuf        []string // labelSetOf's buffers
	setBuf        []byte
	constraintIDs map[string]int
	classes       []*class
	existing      []*candidate
	nodes         []*candidate // existing first, then planned in creation order
	staticSigs    map[string]int
	existCompat   map[[2]int]string
	vol           *volumeIndex

	failures map[*podInfo]string
	// noRepack, noExchange and noRezone turn off steps of the improvement pass, noTopoMemo the topology answers kept
	// per sig (tests compare with and without them).
	noRepack, noExchange, noRezone, noTopoMemo bool
	// order holds planned nodes by current price; refused[idx]==stamp flags nodes that will never take the current
	// class.
	order   []*candidate
	refused []uint32
	stamp   uint32
	// blockRoom holds, for each roomBlock consecutive nodes, the most cpu and memory one of them has free at its
	// current option (blockDirty: to be recomputed), so placeBatch skips runs of full nodes without looking at each.
	blockRoom  [][2]int64
	blockDirty []bool
	// claimInfo is the explained pod's resource claims (Explain only).
	claimInfo *claimExplain
}

type narrowResult struct {
	sig    *sig
	reason string
}

// candidate is an existing node, an in-flight NodeClaim or a planned NodeClaim.
type candidate struct {
	idx       int
	name      string
	existing  *StateNode
	labels    map[string]string
	staticSig int
	alloc     Vec
	cost      float64
	sig       *sig
	ptr       int
	used      Vec
	ports     []hostPort
	volumes   map[string]bool
	volCount  map[string]int
	volLimits map[string]int
	pods      []*podInfo
	// bound is what an existing node's bound pods add up to (preparedPods); shared with the memo, read only.
	bound *boundPods
	// self and domains cache topology domain slices so checks do not allocate
	self    []string
	domains map[string][]string
}

func (n *candidate) taints() []corev1.Taint {
	if n.existing != nil {
		return n.existing.Taints
	}
	return n.sig.pool.taints
}

// capacityNow is what pods may use on the node at its current cheapest option.
func (n *candidate) capacityNow() Vec {
	if n.existing != nil {
		return n.alloc
	}
	return n.sig.opts[n.ptr].t.avail
}

func (n *candidate) price() float64 { return n.cost }

func newSolver(ctx context.Context, snap *Snapshot, opts Options) *solver {
	return &solver{ctx: ctx, snap: snap, opts: opts, sigs: map[string]*sig{}, narrowCache: map[narrowKey]narrowResult{},
		pinCache: map[pinKey]*sig{}, groupIDs: map[string]*group{}, antiOf: map[*corev1.Pod][]*group{}, constraintIDs: map[string]int{},
		staticSigs: map[string]int{}, existCompat: map[[2]int]string{}, failures: map[*podInfo]string{}}
}

func (s *solver) prepare() error {
	s.dims = NewDims(s.extendedResources()...)
	if s.opts.Memo != nil {
		s.opts.Memo.begin(s.dims, s.snap.DaemonSets)
	}
	s.vol = newVolumeIndex(s.snap)
	s.prepareDaemonSets()
	if err := s.preparePools(); err != nil {
		return err
	}
	s.prepareExisting()
	s.buildClasses()
	s.orderClasses()
	s.countExistingPods()
	s.computeUniverses()
	return nil
}
func (s *solver) extendedResources() []corev1.ResourceName {
	set := map[corev1.ResourceName]bool{}
	addList := func(l corev1.ResourceList) {
		for n := range l {
			if !isFixed(n) && n != ResourceNodes {
				set[n] = true
			}
		}
	}
	for _, p := range s.snap.Pods {
		if p != nil {
			addList(PodRequests(p))
		}
	}
	m := s.opts.Memo
	for _, n := range s.snap.Nodes {
		if n == nil {
			continue
		}
		if m == nil {
			addList(n.Allocatable)
			continue
		}
		// Looked up, not walked: a drain check's solve walked the allocatable of thousands of nodes for none.
		names, ok := m.extended[n]
		if !ok {
			for r := range n.Allocatable {
				if !isFixed(r) && r != ResourceNodes {
					names = append(names, r)
				}
			}
			m.extended[n] = names
		}
		for _, r := range names {
			set[r] = true
		}
	}
	for _, its := range s.snap.InstanceTypes {
		for _, it := range its {
			if it != nil {
				addList(it.Capacity)
			}
		}
	}
	for _, np := range s.snap.NodePools {
		if np != nil {
			addList(np.Limits)
		}
	}
	out := make([]corev1.ResourceName, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	return out
}

func (s *solver) prepareExisting() {
	nodes := make([]*StateNode, 0, len(s.snap.Nodes))
	for _, n := range s.snap.Nodes {
		if n != nil && !n.MarkedForDeletion {
			nodes = append(nodes, n)
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].InFlight != nodes[j].InFlight {
			return !nodes[i].InFlight
		}
		return nodes[i].Name < nodes[j].Name
	})
	// One allocation for the candidates and one for their usage: a drain check solves over thousands of
	// existing nodes hundreds of times a pass, and allocating each node's on its own was most of its garbage.
	slab := make([]candidate, len(nodes))
	dims := s.dims.Len()
	usedSlab := make([]int64, len(nodes)*dims)
	s.existing = slices.Grow(s.existing, len(nodes))
	s.nodes = slices.Grow(s.nodes, len(nodes))
	s.refused = slices.Grow(s.refused, len(nodes))
	for i, sn := range nodes {
		n := &slab[i]
		*n = candidate{idx: len(s.nodes), name: sn.Name, existing: sn, labels: sn.Labels,
			used: Vec(usedSlab[i*dims : (i+1)*dims : (i+1)*dims]), volLimits: sn.VolumeLimits}
		if n.labels == nil {
			n.labels = map[string]string{}
		}
		if _, ok := n.labels[labelHostname]; !ok && !sn.InFlight {
			n.labels = copyLabels(n.labels)
			n.labels[labelHostname] = sn.Name
		}
		prepared := s.preparedNode(n)
		n.alloc = prepared.alloc
		n.staticSig = s.staticSigOf(prepared.staticKey)
		bound := s.preparedPods(sn)
		n.used.Add(bound.used)
		n.ports = bound.ports // clipped: a pod placed here appends to a copy
		if len(bound.vols) > 0 {
			// Left nil otherwise, as for new nodes: reads of a nil map find nothing, and commit makes them.
			n.volumes, n.volCount = map[string]bool{}, map[string]int{}
		}
		for _, u := range bound.vols {
			n.volumes[u.id] = true
			n.volCount[u.driver]++
		}
		n.bound = bound
		for _, i := range bound.anti {
			pod := sn.Pods[i]
			for _, t := range s.antiTerms(pod) {
				s.antiOf[pod] = append(s.antiOf[pod], s.internTerm(t))
			}
		}
		s.existing = append(s.existing, n)
		s.nodes = append(s.nodes, n)
		s.refused = append(s.refused, 0)
		s.touch(n)
	}
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	return out
}

// staticSigOf interns a node's static signature key (staticKey): nodes with the same key have the same labels
// (but for the hostname) and taints.
func (s *solver) staticSigOf(k string) int {
	id, ok := s.staticSigs[k]
	if !ok {
		id = len(s.staticSigs)
		s.staticSigs[k] = id
	}
	return id
}

// staticKey is an existing node's labels (but for the hostname) and taints as one string.
func staticKey(n *candidate) string {
	var b strings.Builder
	keys := make([]string, 0, len(n.labels))
	for k := range n.labels {
		if k != labelHostname {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + n.labels[k] + ",")
	}
	for _, t := range n.existing.Taints {
		fmt.Fprintf(&b, "|%s=%s:%s", t.Key, t.Value, t.Effect)
	}
	return b.String()
}

// countExistingPods records pods already on nodes (bound, or pinned to an in-flight NodeClaim) in every topology
// group. A group asks its selector once for each label set of the pods (matchesSet), not once for each pod.
func (s *solver) countExistingPods() {
	if len(s.groups) == 0 {
		return
	}
	for _, n := range s.existing {
		pods := n.existing.Pods
		sets := s.podLabelSets(n.existing, n.bound)
		for _, g := range s.groups {
			v, ok := n.labels[g.key]
			// An in-flight NodeClaim has no hostname label yet but is a hostname domain of its own (hostname
			// groups count by node index): the pods pinned to it count there.
			if !ok && g.key != labelHostname {
				continue
			}
			for i, pod := range pods {
				if pod != nil && g.matchesSet(sets[i], pod) && g.eligible(n) {
					g.record(v, n.idx, false, true)
				}
			}
			if g.kind != kindAnti {
				continue
			}
			for _, i := range n.bound.anti {
				if slices.Contains(s.antiOf[pods[i]], g) {
					g.record(v, n.idx, true, false)
					g.constrainedTotal-- // existing pods are not planned; only their domain matters
				}
			}
		}
	}
}

// placeRoundPods is about how many pending pods one placement round takes (see placeClasses); a workload of fewer
// than twice as many is placed in one round.
const placeRoundPods = 2000

// placeClasses places the classes in order, in rounds: each round places an equal share of every class's pods
// (classes of pods needing a node of their own go whole in the first round). Placed whole, a large class fills
// the room first-fit finds, and the nodes grown for it, with copies of itself; in rounds, pods of the other
// classes, which often fit the leftover room better, come between them, as they do in a smaller workload. Round
// size, measured on the benchmark mix (three seeds, twelve sizes from 1,000 to 20,000 pods), as the mean change
// of the final price against one round: 1,500 pods -0.16%, 2,000 -0.18%, 2,500 -0.13%, 3,000 -0.06%, 4,000
// -0.06%; from 7,000 pods up rounds of 2,000 gain 0.34% on average and up to 1.0%, below they gain nothing on
// average (3,000 pods in two rounds of 1,500 were 0.5% dearer).
func (s *solver) placeClasses() error {
	pending := 0
	for _, c := range s.classes {
		pending += len(c.pods)
	}
	rounds := max(1, pending/placeRoundPods)
	for r := 0; r < rounds; r++ {
		for _, c := range s.classes {
			if err := s.ctx.Err(); err != nil {
				return fmt.Errorf("solve interrupted: %w", err)
			}
			if c.tier == 0 || c.err != "" {
				if r == 0 {
					s.placeClass(c)
				}
				continue
			}
			if lo, hi := len(c.pods)*r/rounds, len(c.pods)*(r+1)/rounds; hi > lo {
				s.placePods(c, c.pods[lo:hi])
			}
		}
	}
	return nil
}

// placeClass places every pod of the class, relaxing preferences when a pod does not fit.
func (s *solver) placeClass(c *class) {
	if c.err != "" {
		for _, p := range c.pods {
			s.failures[p] = c.err
		}
		return
	}
	s.placePods(c, c.pods)
}

// retryAffinityFailures gives pods with one required pod affinity term that found no node another chance once
// every class has been placed: the pods they must join may have been placed after them (classes go largest
// first). It repeats while a round places something, at most a few rounds. Pods with several terms are left
// alone: the kube-scheduler counts only pods matching every term at once, which placement checks term by term.
func (s *solver) retryAffinityFailures() {
	for round := 0; round < 3; round++ {
		placed := false
		for _, c := range s.classes {
			if len(c.affHard) != 1 || c.err != "" {
				continue
			}
			var failed []*podInfo
			for _, p := range c.pods {
				if _, ok := s.failures[p]; ok {
					failed = append(failed, p)
				}
			}
			if len(failed) == 0 {
				continue
			}
			for _, p := range failed {
				delete(s.failures, p)
			}
			s.placePods(c, failed)
			for _, p := range failed {
				if _, ok := s.failures[p]; !ok {
					placed = true
				}
			}
		}
		if !placed {
			return
		}
	}
}

// placePods places pending pods of the class, relaxing preferences when a pod does not fit.
func (s *solver) placePods(c *class, pending []*podInfo) {
	for len(pending) > 0 {
		n := s.placeBatch(c, pending)
		if n > 0 {
			pending = pending[n:]
			continue
		}
		if s.relax(c) {
			continue
		}
		reason := s.explainClass(c)
		for _, p := range pending {
			s.failures[p] = reason
		}
		return
	}
}

// attempt is the outcome of trying one pod of a class on one node.
type attempt struct {
	ok        bool
	permanent bool // the node will never take this class
	sig       *sig
	ptr       int
	delta     float64
	// unit is delta divided by how many pods of the class the chosen option holds beyond what the node holds now
	unit   float64
	reason string
	topo   topoFailure
}

func (a attempt) why() string {
	if a.topo.set {
		return a.topo.String()
	}
	return a.reason
}

// try evaluates placing one pod of c on n. With grow false it only accepts the node's current option.
func (s *solver) try(c *class, n *candidate, grow bool) attempt {
	if n.existing != nil {
		return s.tryExisting(c, n)
	}
	nr := s.narrow(n.sig, c.cur)
	if nr.sig == nil {
		return attempt{permanent: true, reason: nr.reason}
	}
	g := nr.sig
	if !Fits(n.used, c.req, g.maxAvl) {
		return attempt{permanent: true, reason: "resources"}
	}
	if portConflict(n.ports, c.ports) {
		return attempt{permanent: true, reason: "host port conflict"}
	}
	if g == n.sig && !grow && !Fits(n.used, c.req, n.sig.opts[n.ptr].t.avail) {
		return attempt{reason: "no slack"}
	}
	if !grow && g != n.sig && !s.holdsAtPrice(g, n, c.req) {
		// checked before the topology, which is dearer: no option of g (or of a pinning of g, which costs no less)
		// takes the pod without raising the node's price
		return attempt{reason: "no slack"}
	}
	g, fail := s.topologyCheck(c, n, g)
	if fail.set {
		return attempt{topo: fail, permanent: fail.permanent()}
	}
	ptr, volumesShort := -1, false
	for i, o := range g.opts {
		if Fits(n.used, c.req, o.t.avail) && s.withinLimits(n, o.t) {
			if !typeTakesVolumes(o.t, n, c) {
				volumesShort = true
				continue
			}
			ptr = i
			break
		}
	}
	if ptr < 0 {
		if volumesShort {
			return attempt{reason: "volume attach limit"}
		}
		return attempt{reason: "resources"}
	}
	delta := g.opts[ptr].price - n.price()
	if !grow && delta > 1e-12 {
		return attempt{reason: "no slack"}
	}
	if len(g.pool.minVals) > 0 && s.opts.MinValuesPolicy != MinValuesPolicyBest {
		need := n.used.Clone()
		need.Add(c.req)
		if k, _, _ := minValuesShort(g.pool, g.reqs, g.opts, func(t *itInfo) bool { return need.LessEq(t.avail) }); k != "" {
			return attempt{reason: "minValues " + k}
		}
	}
	extra := max(1, HowMany(n.used, c.req, g.opts[ptr].t.avail, 1<<20))
	return attempt{ok: true, sig: g, ptr: ptr, delta: delta, unit: delta / float64(extra)}
}

func (s *solver) tryExisting(c *class, n *candidate) attempt {
	key := [2]int{c.cur.id, n.staticSig}
	why, ok := s.existCompat[key]
	if !ok {
		why = s.existingStatic(c, n)
		s.existCompat[key] = why
	}
	if why != "" {
		return attempt{permanent: true, reason: why}
	}
	if r, ok := c.cur.reqs[labelHostname]; ok && !r.Matches(n.labels[labelHostname], true) {
		return attempt{permanent: true, reason: "hostname"}
	}
	if !Fits(n.used, c.req, n.alloc) {
		return attempt{permanent: true, reason: "resources"}
	}
	if portConflict(n.ports, c.ports) {
		return attempt{permanent: true, reason: "host port conflict"}
	}
	if !s.volumesFit(n, c) {
		return attempt{permanent: true, reason: "volume attach limit"}
	}
	if _, fail := s.topologyCheck(c, n, nil); fail.set {
		return attempt{topo: fail, permanent: fail.permanent()}
	}
	return attempt{ok: true}
}

func (s *solver) existingStatic(c *class, n *candidate) string {
	for k, r := range c.cur.reqs {
		if k == labelHostname {
			continue
		}
		v, ok := n.labels[k]
		if !r.Matches(v, ok) {
			return "requirement " + r.String()
		}
	}
	if t := untolerated(n.existing.Taints, c.tolerations); t != nil {
		return fmt.Sprintf("taint %s", taintString(t))
	}
	return ""
}

func taintString(t *corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

func portConflict(have, want []hostPort) bool {
	for _, w := range want {
		for _, h := range have {
			if w.conflicts(h) {
				return true
			}
		}
	}
	return false
}

// holdsAtPrice reports whether an option of g within the pool's limits holds n's pods and req for no more than
// n's price now.
func (s *solver) holdsAtPrice(g *sig, n *candidate, req Vec) bool {
	for _, o := range g.opts {
		if o.price-n.price() > 1e-12 {
			return false
		}
		if Fits(n.used, req, o.t.avail) && s.withinLimits(n, o.t) {
			return true
		}
	}
	return false
}

func (s *solver) withinLimits(n *candidate, t *itInfo) bool {
	p := n.sig.pool
	cur := n.sig.opts[n.ptr].t
	for i, lim := range p.limited {
		if lim && p.used[i]-cur.capacity[i]+t.capacity[i] > p.limits[i] {
			return false
		}
	}
	return true
}

// narrow intersects a sig with a class's requirements. Answers are kept on cons by sig id (placement asks for every
// node it looks at) and in narrowCache for every constraint set with the same requirements and tolerations.
func (s *solver) narrow(g *sig, cons *constraints) narrowResult {
	if g.id < len(cons.narrowed) {
		if r := cons.narrowed[g.id]; r.sig != nil || r.reason != "" {
			return r
		}
	}
	k := narrowKey{g.id, cons.id}
	r, ok := s.narrowCache[k]
	if !ok {
		r = s.computeNarrow(g, cons)
		s.narrowCache[k] = r
	}
	for len(cons.narrowed) <= g.id {
		cons.narrowed = append(cons.narrowed, narrowResult{})
	}
	cons.narrowed[g.id] = r
	return r
}

func (s *solver) computeNarrow(g *sig, cons *constraints) narrowResult {
	p := g.pool
	if t := untolerated(p.taints, cons.tolerations); t != nil {
		return narrowResult{reason: fmt.Sprintf("pod does not tolerate taint %s", taintString(t))}
	}
	reqs := g.reqs
	changed := false
	for _, k := range cons.reqs.Keys() {
		r := cons.reqs[k]
		if have, ok := reqs[k]; ok {
			m := have.Intersect(r)
			if !m.Satisfiable() || (!m.HasValues() && !have.AllowAbsent) {
				return narrowResult{reason: fmt.Sprintf("requirement %s conflicts with NodePool %s", r, have)}
			}
			if !m.Equal(have) {
				if !changed {
					reqs = reqs.Copy()
					changed = true
				}
				reqs[k] = m
			}
			continue
		}
		if (p.typeKeys[k] && k != labelHostname) || p.launchKeys[k] {
			if !changed {
				reqs = reqs.Copy()
				changed = true
			}
			reqs[k] = r
			continue
		}
		if !r.AllowAbsent {
			return narrowResult{reason: fmt.Sprintf("requirement %s: NodePool %s does not set label %s", r, p.np.Name, k)}
		}
	}
	if !changed {
		return narrowResult{sig: g}
	}
	ng := s.sigFor(p, reqs)
	if ng.err != "" {
		return narrowResult{reason: ng.err}
	}
	return narrowResult{sig: ng}
}

// pin narrows a sig to one value of a topology key.
func (s *solver) pin(g *sig, key, value string) *sig {
	pk := pinKey{g.id, key, value}
	if out, ok := s.pinCache[pk]; ok {
		return out
	}
	reqs := g.reqs.Copy()
	reqs.Add(In(key, value))
	out := s.sigFor(g.pool, reqs)
	if out.err != "" || len(out.opts) == 0 {
		out = nil
	}
	s.pinCache[pk] = out
	return out
}

// commit places pod p of class c on node n as evaluated by a.
func (s *solver) commit(c *class, p *podInfo, n *candidate, a attempt) {
	if n.existing == nil {
		pool := n.sig.pool
		old := n.sig.opts[n.ptr].t
		n.sig, n.ptr = a.sig, a.ptr
		nw := n.sig.opts[n.ptr].t
		pool.used.Sub(old.capacity)
		pool.used.Add(nw.capacity)
		if p := n.sig.opts[n.ptr].price; p != n.cost {
			oldCost := n.cost
			n.cost = p
			s.reorder(n, oldCost)
		}
	}
	n.used.Add(c.req)
	n.ports = append(n.ports, c.ports...)
	for _, u := range c.volumes {
		if n.volumes == nil {
			n.volumes, n.volCount = map[string]bool{}, map[string]int{}
		}
		if !n.volumes[u.id] {
			n.volumes[u.id] = true
			n.volCount[u.driver]++
		}
	}
	n.pods = append(n.pods, p)
	s.recordTopology(c, n)
	s.touch(n)
}

// roomBlock is how many consecutive nodes share an entry of the solver's blockRoom.
const roomBlock = 32

// touch flags n's entry of blockRoom for recomputing after n's pods or option changed.
func (s *solver) touch(n *candidate) {
	b := n.idx / roomBlock
	for len(s.blockDirty) <= b {
		s.blockDirty = append(s.blockDirty, true)
		s.blockRoom = append(s.blockRoom, [2]int64{})
	}
	s.blockDirty[b] = true
}

// blockMayHold reports whether some node of block b may have room for req at its current option (it looks at cpu
// and memory only).
func (s *solver) blockMayHold(b int, req Vec) bool {
	if s.blockDirty[b] {
		room := [2]int64{-1, -1}
		for _, n := range s.nodes[b*roomBlock : min(len(s.nodes), (b+1)*roomBlock)] {
			capNow := n.capacityNow()
			room[0] = max(room[0], capNow[dimCPU]-n.used[dimCPU])
			room[1] = max(room[1], capNow[dimMemory]-n.used[dimMemory])
		}
		s.blockRoom[b], s.blockDirty[b] = room, false
	}
	return s.blockRoom[b][0] >= req[dimCPU] && s.blockRoom[b][1] >= req[dimMemory]
}

// placeBatch places pods of c: first into room nodes already have (existing nodes, then planned nodes at their
// current cheapest option), then step by step by growing one planned node or opening a new one, whichever raises
// the hourly price least. It returns how many pods it placed; the caller relaxes preferences when none fit.
func (s *solver) placeBatch(c *class, pods []*podInfo) int {
	if s.opts.LeastAllocated {
		return s.placeLeastAllocated(c, pods)
	}
	placed := 0
	s.stamp++
	for b := 0; b*roomBlock < len(s.nodes) && placed < len(pods); b++ {
		if !s.blockMayHold(b, c.req) {
			continue
		}
		for _, n := range s.nodes[b*roomBlock : min(len(s.nodes), (b+1)*roomBlock)] {
			if placed == len(pods) {
				break
			}
			if !Fits(n.used, c.req, n.capacityNow()) {
				// no room at the current option: only growth can help (bestGrowth)
				continue
			}
			a := s.try(c, n, false)
			for a.ok && placed < len(pods) {
				s.commit(c, pods[placed], n, a)
				placed++
				a = s.try(c, n, false)
			}
			if a.permanent {
				s.refused[n.idx] = s.stamp
			}
		}
	}
	for placed < len(pods) {
		best := s.bestGrowth(c)
		var nn *candidate
		var na attempt
		if best == nil || best.a.delta > 1e-12 {
			// a node with room left (no price change) always beats a new node
			nn, na = s.newNodeFor(c)
		}
		if best == nil || (nn != nil && na.unit < best.a.unit*newNodeBias-1e-12) {
			if nn == nil {
				return placed
			}
			s.addNode(nn)
			best = &growItem{n: nn, a: na}
		}
		n, a := best.n, best.a
		for a.ok && placed < len(pods) {
			s.commit(c, pods[placed], n, a)
			placed++
			a = s.try(c, n, false)
		}
	}
	return placed
}

// placeLeastAllocated places pods of c one at a time, each on the existing node that takes it and keeps the
// largest mean share of its allocatable cpu and memory free afterwards (the lowest index among equals), nodes
// with a PreferNoSchedule taint the pod does not tolerate after every node without (preferAvoidedPenalty). It
// returns how many pods it placed.
func (s *solver) placeLeastAllocated(c *class, pods []*podInfo) int {
	for placed := range pods {
		var best *candidate
		var bestA attempt
		bestScore := math.Inf(-1)
		for b := 0; b*roomBlock < len(s.nodes); b++ {
			if !s.blockMayHold(b, c.req) {
				continue
			}
			for _, n := range s.nodes[b*roomBlock : min(len(s.nodes), (b+1)*roomBlock)] {
				if n.existing == nil || !Fits(n.used, c.req, n.alloc) {
					continue
				}
				score := freeShare(n.used, c.req, n.alloc) - preferAvoidedPenalty*float64(preferAvoided(n.existing.Taints, c.tolerations))
				if score <= bestScore {
					continue
				}
				if a := s.try(c, n, false); a.ok {
					best, bestA, bestScore = n, a, score
				}
			}
		}
		if best == nil {
			return placed
		}
		s.commit(c, pods[placed], best, bestA)
	}
	return len(pods)
}

// preferAvoidedPenalty is what each PreferNoSchedule taint a pod does not tolerate takes from a node's free
// share in placeLeastAllocated. The kube-scheduler scores a node's untolerated PreferNoSchedule taints
// (TaintToleration, weight 3) above the room it leaves (NodeResourcesFit, weight 1), each scored 0 to 100: a
// node it must avoid loses to any node that takes the pod without such a taint, whatever their room.
const preferAvoidedPenalty = 3.0

// preferAvoided counts the PreferNoSchedule taints none of the tolerations covers.
func preferAvoided(taints []corev1.Taint, tolerations []corev1.Toleration) int {
	n := 0
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return ToleratesTaint(&tol, t) }) {
			n++
		}
	}
	return n
}

// freeShare is the mean share of a node's allocatable cpu and memory left free once req is added to used.
func freeShare(used, req, alloc Vec) float64 {
	share, dims := 0.0, 0
	for _, d := range []int{dimCPU, dimMemory} {
		if alloc[d] > 0 {
			share += float64(alloc[d]-used[d]-req[d]) / float64(alloc[d])
			dims++
		}
	}
	if dims == 0 {
		return 0
	}
	return share / float64(dims)
}

// growthCandidates is how many of the cheapest growable planned nodes bestGrowth evaluates.
const growthCandidates = 8

// newNodeBias: a new node must cost less per pod of the class than this fraction of the cheapest growth to be
// preferred: a grown node's extra room is usually filled by later pods, and fewer nodes carry less overhead.
const newNodeBias = 0.7

// bestGrowth returns, among the cheapest planned nodes that may grow to take the current class and have not
// refused it, the one whose growth to fit one more pod raises the price least (0 when it still has room).
func (s *solver) bestGrowth(c *class) *growItem {
	var best *growItem
	found := 0
	for _, n := range s.order {
		if s.refused[n.idx] == s.stamp || !Fits(n.used, c.req, n.sig.maxAvl) {
			continue
		}
		a := s.try(c, n, true)
		if !a.ok {
			if a.permanent {
				s.refused[n.idx] = s.stamp
			}
			continue
		}
		if best == nil || a.unit < best.a.unit-1e-12 {
			best = &growItem{n: n, a: a}
			if a.delta <= 1e-12 {
				break
			}
		}
		found++
		if found >= growthCandidates {
			break
		}
	}
	return best
}

// reorder keeps s.order sorted by (price, index) after n's price changed from old.
func (s *solver) reorder(n *candidate, old float64) {
	less := func(p float64, idx int, m *candidate) bool {
		if p != m.cost {
			return p < m.cost
		}
		return idx < m.idx
	}
	if old >= 0 {
		at := sort.Search(len(s.order), func(i int) bool { return !less(s.order[i].cost, s.order[i].idx, &candidate{cost: old, idx: n.idx}) })
		for at < len(s.order) && s.order[at] != n {
			at++
		}
		if at < len(s.order) {
			s.order = append(s.order[:at], s.order[at+1:]...)
		}
	}
	at := sort.Search(len(s.order), func(i int) bool { return less(n.cost, n.idx, s.order[i]) })
	s.order = append(s.order, nil)
	copy(s.order[at+1:], s.order[at:])
	s.order[at] = n
}

type growItem struct {
	n *candidate
	a attempt
}

func (s *solver) addNode(n *candidate) {
	n.idx = len(s.nodes)
	s.nodes = append(s.nodes, n)
	s.refused = append(s.refused, 0)
	n.cost = n.sig.opts[n.ptr].price
	s.reorder(n, -1)
	s.touch(n)
	p := n.sig.pool
	p.nodes++
	p.used.Add(n.sig.opts[n.ptr].t.capacity)
}

// newNodeFor returns a fresh planned node from the first NodePool (by weight) that can take one pod of c, with
// the attempt to place it.
func (s *solver) newNodeFor(c *class) (*candidate, attempt) {
	for _, p := range s.pools {
		if p.limNodes >= 0 && p.nodes+1 > p.limNodes {
			continue
		}
		if untolerated(p.taints, c.tolerations) != nil {
			continue
		}
		base := s.sigFor(p, p.reqs)
		if base.err != "" {
			continue
		}
		nr := s.narrow(base, c.cur)
		if nr.sig == nil || !Fits(s.dims.Zero(), c.req, nr.sig.maxAvl) {
			continue
		}
		// start from the cheapest option within limits so growth accounting has a baseline
		ptr := -1
		for i, o := range nr.sig.opts {
			if c.req.LessEq(o.t.avail) && s.fitsPoolLimits(p, o.t) {
				ptr = i
				break
			}
		}
		if ptr < 0 {
			continue
		}
		n := &candidate{idx: len(s.nodes), name: fmt.Sprintf("%s-%d", p.np.Name, len(s.nodes)+1), sig: nr.sig, ptr: ptr, used: s.dims.Zero(),
			cost: nr.sig.opts[ptr].price}
		// account the baseline as if already added, so try() computes limits against it
		p.used.Add(n.sig.opts[n.ptr].t.capacity)
		a := s.try(c, n, true)
		p.used.Sub(n.sig.opts[n.ptr].t.capacity)
		if !a.ok {
			continue
		}
		a.delta = a.sig.opts[a.ptr].price
		a.unit = a.delta / float64(max(1, HowMany(n.used, c.req, a.sig.opts[a.ptr].t.avail, 1<<20)))
		return n, a
	}
	return nil, attempt{}
}

func (s *solver) fitsPoolLimits(p *poolInfo, t *itInfo) bool {
	for i, lim := range p.limited {
		if lim && p.used[i]+t.capacity[i] > p.limits[i] {
			return false
		}
	}
	return true
}

// orderClasses sorts the classes for first-fit-decreasing: by tier (pods needing a node of their own first), then
// by size, measured as the class's largest share of the total cpu or memory demand, so pods large in either
// resource are placed while nodes still have room in both.
func (s *solver) orderClasses() {
	total := s.dims.Zero()
	for _, c := range s.classes {
		total.AddScaled(c.req, int64(len(c.pods)))
	}
	size := func(c *class) float64 {
		x := 0.0
		for _, d := range []int{dimCPU, dimMemory} {
			if total[d] > 0 {
				x += float64(c.req[d]) / float64(total[d])
			}
		}
		return x
	}
	sizes := make(map[*class]float64, len(s.classes))
	for _, c := range s.classes {
		sizes[c] = size(c)
	}
	sort.SliceStable(s.classes, func(i, j int) bool {
		a, b := s.classes[i], s.classes[j]
		if s.opts.LeastAllocated {
			// the kube-scheduler's order is not ours: the small pods first take the emptiest nodes
			return sizes[a] < sizes[b]
		}
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if sizes[a] != sizes[b] {
			return sizes[a] > sizes[b]
		}
		return false
	})
	for i, c := range s.classes {
		c.id = i
	}
}
