package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type groupKind int

const (
	kindSpread groupKind = iota
	kindAffinity
	kindAnti
)

// group tracks one topology constraint shared by pods: a spread constraint, a pod affinity term or a pod
// anti-affinity term, with the count of matching pods per domain (value of the topology key).
//
// Invariants kept for every planned pod p the group constrains, with all other pods in place (so the kube-scheduler
// accepts p whatever order the pods are bound in):
//   - spread: count(domain(p)) <= min over eligible domains + maxSkew (hostname: count <= maxSkew, as a new node
//     is always an eligible domain with zero pods);
//   - affinity: another matching pod shares p's domain, or no other matching pod exists and p matches itself;
//   - anti-affinity: no other matching pod shares p's domain, and p shares no domain with a pod whose anti-affinity
//     term matches p.
type group struct {
	id         int
	kind       groupKind
	key        string
	namespaces map[string]bool // nil: all namespaces
	selector   labels.Selector
	maxSkew    int
	minDomains int
	// soft groups come from preferences (ScheduleAnyway, preferred pod (anti-)affinity): they bind only the pods
	// that hold the preference, never pods that merely match the selector.
	soft        bool
	filter      []Requirements // ORed node affinity terms (nodeAffinityPolicy Honor); nil: every node
	taintsHonor bool
	tolerations []corev1.Toleration

	counts           map[string]int
	constrained      map[string]int
	total            int
	constrainedTotal int
	universe         []string
	// hostname groups count per node index instead (domains are nodes)
	hostCounts      []int32
	hostConstrained []int32
	// spread groups on other keys keep the universe's counts in a slice for a fast minimum
	uindex map[string]int
	ucount []int
	// eligibility caches: by sig id for planned nodes, by node index for existing ones
	eligSig  answers
	eligNode answers
	// setMatch caches matchesPod by bound pods' label set (matchesSet)
	setMatch answers
	// version grows with every change to the counts (record, unrecordZone), so answers drawn from them can be
	// kept until it moves.
	version uint64
}

func (g *group) String() string {
	switch g.kind {
	case kindSpread:
		return fmt.Sprintf("topology spread on %s (maxSkew %d, selector %s)", g.key, g.maxSkew, g.selector)
	case kindAffinity:
		return fmt.Sprintf("pod affinity on %s (selector %s)", g.key, g.selector)
	default:
		return fmt.Sprintf("pod anti-affinity on %s (selector %s)", g.key, g.selector)
	}
}

func (g *group) internKey() string {
	var ns []string
	for n := range g.namespaces {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	f := ""
	for _, t := range g.filter {
		f += "{" + t.String() + "}"
	}
	return fmt.Sprintf("%d|%s|%v|%v|%s|%d|%d|%s|%v|%s|%v", g.kind, g.key, g.namespaces == nil, strings.Join(ns, ","),
		g.selector.String(), g.maxSkew, g.minDomains, f, g.taintsHonor, tolerationsKey(g.tolerations), g.soft)
}

func (s *solver) internGroup(g *group) *group { return s.internKeyed(g.internKey(), g) }

// groupTerm is a group as a pod's term defines it, before any solve counts in it, with its intern key.
type groupTerm struct {
	def group
	key string
}

// internTerm returns the solve's group for the term: a copy of its definition the first time.
func (s *solver) internTerm(t *groupTerm) *group {
	if old, ok := s.groupIDs[t.key]; ok {
		return old
	}
	g := t.def
	return s.internKeyed(t.key, &g)
}

// antiTerms returns the groups of an existing pod's required anti-affinity terms: parsing their selectors and
// building their keys was, for every pod with such terms on every node, most of a solve's preparation at 5,000
// nodes; with a memo it is done once while the pod is unchanged.
func (s *solver) antiTerms(pod *corev1.Pod) []*groupTerm {
	m := s.opts.Memo
	if m != nil {
		if e, ok := m.anti[pod]; ok {
			m.hits++
			if e.gen != m.gen {
				e.gen = m.gen
				m.anti[pod] = e
			}
			return e.terms
		}
		m.misses++
	}
	var terms []*groupTerm
	for _, t := range pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		g := affinityTermGroup(kindAnti, pod, t, false)
		terms = append(terms, &groupTerm{def: *g, key: g.internKey()})
	}
	if m != nil {
		m.anti[pod] = memoAnti{terms: terms, gen: m.gen}
	}
	return terms
}

// internKeyed returns the solve's group of key k, g (made the solve's) when there is none yet.
func (s *solver) internKeyed(k string, g *group) *group {
	if old, ok := s.groupIDs[k]; ok {
		return old
	}
	g.id = len(s.groups)
	g.counts = map[string]int{}
	g.constrained = map[string]int{}
	s.groupIDs[k] = g
	s.groups = append(s.groups, g)
	return g
}

func (g *group) matchesPod(namespace string, podLabels map[string]string) bool {
	if g.namespaces != nil && !g.namespaces[namespace] {
		return false
	}
	return g.selector.Matches(labels.Set(podLabels))
}

// matchesSet is matchesPod for a bound pod whose label set (labelSetOf) is id, asked once a label set.
func (g *group) matchesSet(id int32, pod *corev1.Pod) bool {
	if ok, known := g.setMatch.get(int(id)); known {
		return ok
	}
	return g.setMatch.set(int(id), g.matchesPod(pod.Namespace, pod.Labels))
}

// answers caches yes/no answers by index (0 unknown, 1 yes, 2 no).
type answers []int8

// get returns the answer at i and whether there is one.
func (a *answers) get(i int) (ok, known bool) {
	if i >= len(*a) {
		*a = append(*a, make([]int8, i+1-len(*a))...)
	}
	v := (*a)[i]
	return v == 1, v != 0
}

// set records ok at i (get made room for it) and returns it.
func (a answers) set(i int, ok bool) bool {
	a[i] = 2
	if ok {
		a[i] = 1
	}
	return ok
}

// eligible reports whether pods on a node count for a spread group (node inclusion policies). For planned nodes
// whose labels are not fully decided yet it answers for the requirements they already have.
func (g *group) eligible(n *candidate) bool { return g.eligibleUnder(n, n.sig) }

// eligibleUnder is eligible for a node under sig under, cached per sig (planned nodes) or node (existing ones).
func (g *group) eligibleUnder(n *candidate, under *sig) bool {
	if g.kind != kindSpread || (g.filter == nil && !g.taintsHonor) {
		return true
	}
	cache, i := &g.eligSig, 0
	if n.existing != nil {
		cache, i = &g.eligNode, n.idx
	} else {
		i = under.id
	}
	if ok, known := cache.get(i); known {
		return ok
	}
	return cache.set(i, g.computeEligible(n, under))
}

func (g *group) computeEligible(n *candidate, under *sig) bool {
	if g.filter != nil {
		ok := false
		for _, t := range g.filter {
			if n.existing != nil {
				ok = t.MatchesLabels(n.labels)
			} else {
				ok = under.reqs.Conflict(t) == ""
			}
			if ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	if g.taintsHonor && untolerated(n.taints(), g.tolerations) != nil {
		return false
	}
	return true
}

// minCount returns the smallest count over the group's eligible domains (0 for hostname and when there are fewer
// domains than minDomains), as if delta were added to domain first.
func (g *group) minCount(domain string, delta int) int {
	if g.key == labelHostname || len(g.universe) < g.minDomains || len(g.universe) == 0 {
		return 0
	}
	at, in := g.uindex[domain]
	m := -1
	for i, c := range g.ucount {
		if in && i == at {
			c += delta
		}
		if m < 0 || c < m {
			m = c
		}
	}
	return m
}

func (g *group) count(domain string, node int) int {
	if g.key == labelHostname {
		if node < len(g.hostCounts) {
			return int(g.hostCounts[node])
		}
		return 0
	}
	return g.counts[domain]
}

func (g *group) constrainedIn(domain string, node int) int {
	if g.key == labelHostname {
		if node < len(g.hostConstrained) {
			return int(g.hostConstrained[node])
		}
		return 0
	}
	return g.constrained[domain]
}

// allows reports whether placing a pod that the group constrains (isC) and/or that matches its selector (isM)
// into domain (node index node for hostname groups) keeps the group's invariant.
func (g *group) allows(domain string, node int, isC, isM, first bool) bool {
	if !isC && g.soft {
		return true
	}
	inc := 0
	if isM {
		inc = 1
	}
	switch g.kind {
	case kindSpread:
		if !isC && !isM {
			return true
		}
		if g.key == labelHostname {
			if !isC && g.constrainedIn(domain, node) == 0 {
				return true // a node without constrained pods may hold any number of matching pods
			}
			return g.count(domain, node)+inc <= g.maxSkew
		}
		// Matching pods keep other domains balanced too: if they piled up in one zone, pods the group constrains
		// could only go to the emptiest zone and a second group could then block that one.
		return g.counts[domain]+inc <= g.minCount(domain, inc)+g.maxSkew
	case kindAffinity:
		if isC && g.count(domain, node) == 0 && !first {
			return false
		}
		if isM && !isC && g.total == 1 && g.constrainedTotal == 1 && g.constrainedIn(domain, node) == 0 {
			return false // the lone constrained pod relies on being the only match
		}
		return true
	default:
		if isC && g.count(domain, node) > 0 {
			return false
		}
		if isM && g.constrainedIn(domain, node) > 0 {
			return false
		}
		return true
	}
}

func (g *group) record(domain string, node int, isC, isM bool) {
	g.version++
	if g.key == labelHostname {
		for len(g.hostCounts) <= node {
			g.hostCounts = append(g.hostCounts, 0)
			g.hostConstrained = append(g.hostConstrained, 0)
		}
		if isM {
			g.hostCounts[node]++
			g.total++
		}
		if isC {
			g.hostConstrained[node]++
			g.constrainedTotal++
		}
		return
	}
	if isM {
		g.counts[domain]++
		g.total++
		if i, ok := g.uindex[domain]; ok {
			g.ucount[i]++
		}
	}
	if isC {
		g.constrained[domain]++
		g.constrainedTotal++
	}
}

// computeUniverses fills each spread group's eligible domains: values of its key on eligible existing nodes plus
// the values NodePools compatible with its node filter can launch into.
func (s *solver) computeUniverses() {
	for _, g := range s.groups {
		if g.kind != kindSpread || g.key == labelHostname {
			continue
		}
		set := map[string]bool{}
		for _, n := range s.existing {
			if v, ok := n.labels[g.key]; ok && g.eligible(n) {
				set[v] = true
			}
		}
		for _, p := range s.pools {
			if g.taintsHonor && untolerated(p.taints, g.tolerations) != nil {
				continue
			}
			terms := g.filter
			if terms == nil {
				terms = []Requirements{nil}
			}
			for _, t := range terms {
				reqs := p.reqs
				if t != nil {
					if p.reqs.Conflict(t) != "" {
						continue
					}
					reqs = p.reqs.Intersect(t)
				}
				for _, v := range s.launchableValues(p, reqs, g.key) {
					set[v] = true
				}
			}
		}
		for v := range set {
			g.universe = append(g.universe, v)
		}
		sort.Strings(g.universe)
		g.uindex = make(map[string]int, len(g.universe))
		g.ucount = make([]int, len(g.universe))
		for i, v := range g.universe {
			g.uindex[v] = i
			g.ucount[i] = g.counts[v]
		}
	}
}

// launchableValues returns the values of key a node of pool p under reqs could get.
func (s *solver) launchableValues(p *poolInfo, reqs Requirements, key string) []string {
	r := reqs[key]
	if p.nodeKeys[key] {
		if r == nil {
			return nil
		}
		return r.Values()
	}
	set := map[string]bool{}
	for _, t := range p.types {
		if !nonNegative(t.avail) {
			continue
		}
		if _, ok := p.typeCompatible(t, reqs); !ok {
			continue
		}
		switch key {
		case labelZone, labelCapacityType:
			zr, ct := reqs[labelZone], reqs[labelCapacityType]
			for _, o := range t.offers {
				if (zr == nil || zr.Has(o.Zone)) && (ct == nil || ct.Has(o.CapacityType)) {
					if key == labelZone {
						set[o.Zone] = true
					} else {
						set[o.CapacityType] = true
					}
				}
			}
		default:
			if v, ok := t.labels[key]; ok {
				set[v] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// domainChoices returns the values node n may have for key: one value when decided, several when a planned node
// may still be narrowed, none when the node will not carry the label.
func (s *solver) domainChoices(n *candidate, key string) []string {
	return s.sigDomainChoices(n, n.sig, key)
}

// sigDomainChoices is domainChoices for a planned node under sig g (which may be a narrowing of its own). The
// returned slice is shared: callers must not modify it.
func (s *solver) sigDomainChoices(n *candidate, g *sig, key string) []string {
	if key == labelHostname {
		if n.self == nil || n.self[0] != n.name {
			n.self = []string{n.name}
		}
		return n.self
	}
	if n.existing != nil {
		if vs, ok := n.domains[key]; ok {
			return vs
		}
		var vs []string
		if v, ok := n.labels[key]; ok {
			vs = []string{v}
		}
		if n.domains == nil {
			n.domains = map[string][]string{}
		}
		n.domains[key] = vs
		return vs
	}
	if vs, ok := g.choices[key]; ok {
		return vs
	}
	var vs []string
	if r := g.reqs[key]; r != nil && r.Finite() && len(r.Values()) <= 1 {
		vs = r.Values()
	} else {
		vs = s.computeSigChoices(g, key)
	}
	if g.choices == nil {
		g.choices = map[string][]string{}
	}
	g.choices[key] = vs
	return vs
}

func (s *solver) computeSigChoices(g *sig, key string) []string {
	p := g.pool
	if p.nodeKeys[key] {
		if r := g.reqs[key]; r != nil {
			return r.Values()
		}
		return nil
	}
	if !p.typeKeys[key] {
		return nil
	}
	set := map[string]bool{}
	zr, ct := g.reqs[labelZone], g.reqs[labelCapacityType]
	for _, o := range g.opts {
		switch key {
		case labelZone, labelCapacityType:
			for _, off := range o.t.offers {
				if (zr == nil || zr.Has(off.Zone)) && (ct == nil || ct.Has(off.CapacityType)) {
					if key == labelZone {
						set[off.Zone] = true
					} else {
						set[off.CapacityType] = true
					}
				}
			}
		default:
			if v, ok := o.t.labels[key]; ok {
				set[v] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// topologyCheck decides the domain of node n for every topology key that matters to class c and reports whether
// c may go there. For a planned node (under sig g0) it returns g0 narrowed to the domains chosen for keys whose
// value was not decided yet. Hostname keys are checked first: their refusals are the ones that never lift.
func (s *solver) topologyCheck(c *class, n *candidate, g0 *sig) (*sig, topoFailure) {
	// a pod may start a series of pods with affinity to each other only if no pod anywhere matches any of its
	// affinity terms and it matches all of them itself
	first := c.cur.selfAffine
	for _, g := range c.cur.affinity {
		if g.total > 0 {
			first = false
		}
	}
	for ki := range c.cur.topo {
		if kg := &c.cur.topo[ki]; kg.key == labelHostname {
			// the node is its own domain: nothing to choose or pin
			for i, g := range kg.groups {
				isM := kg.isM[i] && g.eligibleUnder(n, g0)
				if !g.allows(n.name, n.idx, kg.isC[i], isM, first) {
					return nil, topoFailure{set: true, g: g}
				}
			}
		}
	}
	if n.existing != nil || s.noTopoMemo {
		return s.checkDomainKeys(c, n, g0, first)
	}
	// For a planned node the answer on the other keys depends only on g0 and the groups' counts, not on the node:
	// placement asks the same question of thousands of nodes between two placements (a zone at its spread limit
	// refuses every node pinned to it), so it is kept per sig until a count changes.
	cons := c.cur
	v := uint64(1)
	for _, g := range cons.affinity {
		v += g.version
	}
	for ki := range cons.topo {
		if kg := &cons.topo[ki]; kg.key != labelHostname {
			for _, g := range kg.groups {
				v += g.version
			}
		}
	}
	for len(cons.memo) <= g0.id {
		cons.memo = append(cons.memo, topoMemo{})
	}
	m := &cons.memo[g0.id]
	if m.version != v {
		pinned, fail := s.checkDomainKeys(c, n, g0, first)
		*m = topoMemo{version: v, pinned: pinned, fail: fail}
	}
	return m.pinned, m.fail
}

// topoMemo is a kept answer of topologyCheck on the keys other than the hostname, for planned nodes under one sig.
type topoMemo struct {
	version uint64 // 1 + the sum of the versions of the groups it read when computed; 0: nothing kept
	pinned  *sig
	fail    topoFailure
}

// checkDomainKeys is topologyCheck on the keys other than the hostname.
func (s *solver) checkDomainKeys(c *class, n *candidate, g0 *sig, first bool) (*sig, topoFailure) {
	pinned := g0
	for ki := range c.cur.topo {
		if kg := &c.cur.topo[ki]; kg.key != labelHostname {
			var fail topoFailure
			if pinned, fail = s.checkKey(n, kg, g0, pinned, first); fail.set {
				return nil, fail
			}
		}
	}
	return pinned, topoFailure{}
}

// checkKey chooses the domain of node n (under sig g0) for one topology key other than the hostname where every
// group allows the pod, and pins the node's sig (pinned so far) to it when the node's value for the key was not
// decided yet.
func (s *solver) checkKey(n *candidate, kg *keyGroups, g0, pinned *sig, first bool) (*sig, topoFailure) {
	choices := s.sigDomainChoices(n, g0, kg.key)
	if len(choices) == 0 {
		for i, g := range kg.groups {
			if kg.isC[i] {
				return nil, topoFailure{set: true, g: g, missing: true}
			}
		}
		return pinned, topoFailure{}
	}
	chosen := ""
	var why *group
	var tried uint64
	for k := 0; k < len(choices); k++ {
		j := k
		if len(choices) > 1 && len(choices) <= 64 {
			j = nextChoice(choices, tried, kg, func(d string) float64 { return s.pinnedPrice(g0, n, kg.key, d) })
			tried |= 1 << uint(j)
		}
		d := choices[j]
		ok := true
		for i, g := range kg.groups {
			isM := kg.isM[i] && g.eligibleUnder(n, g0)
			if !g.allows(d, n.idx, kg.isC[i], isM, first) {
				ok = false
				why = g
				break
			}
		}
		if ok {
			chosen = d
			break
		}
	}
	if chosen == "" {
		return nil, topoFailure{set: true, g: why}
	}
	if n.existing == nil && (len(choices) > 1 || !s.decided(n, pinned, kg.key)) {
		if pinned = s.pin(pinned, kg.key, chosen); pinned == nil {
			return nil, topoFailure{set: true, g: why, noType: true, key: kg.key, value: chosen}
		}
	}
	return pinned, topoFailure{}
}

// topoFailure says which group refused a node (set); the message is built only when a reason is reported.
type topoFailure struct {
	set     bool
	g       *group
	missing bool
	noType  bool
	key     string
	value   string
}

func (f *topoFailure) String() string {
	switch {
	case f.missing:
		return fmt.Sprintf("node has no %s label for %s", f.g.key, f.g)
	case f.noType:
		return fmt.Sprintf("no instance type for %s=%s", f.key, f.value)
	default:
		return "would violate " + f.g.String()
	}
}

// permanent reports whether the refusal can never lift for the node (counts on a node only grow).
func (f *topoFailure) permanent() bool {
	if f.missing {
		return true
	}
	return f.g != nil && f.g.key == labelHostname && (f.g.kind == kindAnti || f.g.kind == kindSpread)
}

// nextChoice returns the index of the untried domain to try next: fewest matching pods first for spread, most
// first for affinity, otherwise in order.
func nextChoice(choices []string, tried uint64, kg *keyGroups, price func(string) float64) int {
	g, desc := kg.spread, false
	if g == nil {
		g, desc = kg.aff, true
	}
	best := -1
	bestPrice := -1.0 // computed only when a tie needs it
	for j := range choices {
		if tried&(1<<uint(j)) != 0 {
			continue
		}
		if best < 0 {
			best = j
			continue
		}
		if g != nil {
			a, b := g.counts[choices[best]], g.counts[choices[j]]
			if (!desc && b < a) || (desc && b > a) {
				best, bestPrice = j, -1
				continue
			}
			if a != b {
				continue
			}
		}
		// equal counts: the domain where the node is cheapest
		if bestPrice < 0 {
			bestPrice = price(choices[best])
		}
		if p := price(choices[j]); p < bestPrice {
			best, bestPrice = j, p
		}
	}
	return best
}

// pinnedPrice is the price of the cheapest option of node n's sig g (its own when nil) pinned to key=value.
func (s *solver) pinnedPrice(g *sig, n *candidate, key, value string) float64 {
	if g == nil {
		g = n.sig
	}
	if g == nil {
		return 0
	}
	for _, pp := range g.pinPrices {
		if pp.key == key && pp.value == value {
			return pp.price
		}
	}
	price := 1e18
	if pg := s.pin(g, key, value); pg != nil && len(pg.opts) > 0 {
		price = pg.opts[0].price
	}
	g.pinPrices = append(g.pinPrices, pinPrice{key, value, price})
	return price
}

func (s *solver) decided(n *candidate, g *sig, key string) bool {
	return len(s.sigDomainChoices(n, g, key)) == 1
}

func isConstraint(cons []*group, g *group) bool { return containsGroup(cons, g) }

func containsGroup(gs []*group, g *group) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// recordTopology counts a pod of class c placed on node n (whose labels are decided for the keys involved).
func (s *solver) recordTopology(c *class, n *candidate) {
	for ki := range c.cur.topo {
		kg := &c.cur.topo[ki]
		choices := s.domainChoices(n, kg.key)
		if len(choices) != 1 {
			continue
		}
		for i, g := range kg.groups {
			g.record(choices[0], n.idx, kg.isC[i], kg.isM[i] && g.eligible(n))
		}
	}
}

func (s *solver) groupsOf(c *class) []*group {
	var out []*group
	for _, kg := range c.cur.topo {
		out = append(out, kg.groups...)
	}
	return out
}
