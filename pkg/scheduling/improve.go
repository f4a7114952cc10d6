package scheduling

import "sort"

// Limits on the improvement pass, so it stays a small fraction of the solve at 50,000 pods.
const (
	// shrinkPods is the most pods moved off one node to let it shrink to a cheaper instance type.
	shrinkPods = 3
	// emptyPods is the most pods moved off one node to leave it out of the plan.
	emptyPods = 16
	// emptyTries is how many nodes the pass tries to leave out.
	emptyTries = 32
	// shrinkTargets is how many cheaper options of a node are tried, dearest first.
	shrinkTargets = 4
	// moveScan caps the nodes looked at (a resource check) to find a new home for one pod.
	moveScan = 1024
	// moveChecks caps the full constraint checks made to find a new home for one pod.
	moveChecks = 48
)

// improve is a local search after first-fit-decreasing, in three steps. First it tries to leave out the newest
// nodes, moving their pods to other nodes that have room or grow for less than the node costs. Then repack
// (repack.go) lifts the movable pods off the nodes furthest above their pods' worth and puts them back where the
// price rises least. Then exchange (exchange.go) brings nodes down to a cheaper instance type by moving pods into
// room other nodes have at their current type or swapping them for smaller ones; repack takes the worst half of
// the nodes once more, exchange runs again and repack takes the worst quarter. (shrink, which only moves, is used
// instead of exchange when that is turned off.) A move is made only when it keeps every constraint: resources,
// node requirements and taints (the receiving node's requirements must already admit the pod), and topology, which
// the move may change only on the hostname key (both nodes are in the same domain for every other key the pod's
// groups use). Pods with hostname pod affinity, host ports, volumes, or relaxed preferences are not moved. Last,
// rezone (rezone.go) pins nodes to a cheaper zone where the zone spread constraints allow it on the final counts,
// swapping pods of equal requests across zones to get there. Every kept change lowers the plan's price, so the pass
// ends.
func (s *solver) improve() {
	planned := s.nodes[len(s.existing):]
	if len(planned) < 2 {
		return
	}
	movable := make([]bool, len(s.classes))
	anyMovable := false
	for _, c := range s.classes {
		movable[c.id] = s.movableClass(c)
		anyMovable = anyMovable || movable[c.id]
	}
	if !anyMovable {
		return
	}
	s.reshape(planned, movable)
	if !s.noRezone {
		s.rezone(planned, movable)
	}
}

// reshape is the part of improve that changes which pods share a node: leaving out nodes, repack and exchange (or
// shrink).
func (s *solver) reshape(planned []*candidate, movable []bool) {
	// dearest first: their shrinking saves most; ties by index keep it deterministic
	order := append([]*candidate(nil), planned...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].cost > order[j].cost })
	// leave out nodes whose pods fit elsewhere, newest first (the tail of first-fit holds the leftovers)
	tries := 0
	for i := len(planned) - 1; i >= 0 && tries < emptyTries; i-- {
		a := planned[i]
		if len(a.pods) == 0 || len(a.pods) > emptyPods {
			continue
		}
		all := true
		for _, p := range a.pods {
			all = all && movable[p.class.id] && !anchored(p.class)
		}
		if !all {
			continue
		}
		tries++
		pods := append([]*podInfo(nil), a.pods...)
		sort.SliceStable(pods, func(i, j int) bool { return size2(pods[i].class.req) > size2(pods[j].class.req) })
		s.tryEmpty(a, pods)
	}
	if !s.noRepack {
		s.repack(planned, movable, 1)
	}
	if !s.noExchange {
		// exchange makes the moves shrink would make and swaps too
		s.exchange(planned, movable)
		if !s.noRepack {
			// each opens moves for the other: a second round of both
			s.repack(planned, movable, repackAgain)
			s.exchange(planned, movable)
			s.repack(planned, movable, repackLast)
		}
		return
	}
	roomy := s.roomyNodes(planned)
	for _, a := range order {
		if err := s.ctx.Err(); err != nil {
			return
		}
		s.shrink(a, movable, roomy)
	}
}

// movableClass reports whether pods of c may be moved between planned nodes by improve.
func (s *solver) movableClass(c *class) bool {
	if c.err != "" || len(c.ports) > 0 || len(c.volumes) > 0 || c.maxLevel > 0 || c.level > 0 {
		return false
	}
	for _, kg := range c.cur.topo {
		if kg.key != labelHostname {
			continue
		}
		for _, g := range kg.groups {
			if g.kind == kindAffinity {
				return false
			}
		}
	}
	return true
}

// roomyNodes lists planned nodes with room left for at least the smallest pending request.
func (s *solver) roomyNodes(planned []*candidate) []*candidate {
	var smallest Vec
	for _, c := range s.classes {
		if smallest == nil {
			smallest = c.req.Clone()
			continue
		}
		for d, x := range c.req {
			smallest[d] = min(smallest[d], x)
		}
	}
	var out []*candidate
	for _, n := range planned {
		if len(n.pods) > 0 && Fits(n.used, smallest, n.capacityNow()) {
			out = append(out, n)
		}
	}
	return out
}

// shrink tries to make node a cheaper by moving a few of its pods elsewhere.
func (s *solver) shrink(a *candidate, movable []bool, roomy []*candidate) {
	if len(a.pods) == 0 || len(a.pods) > 64 {
		return
	}
	var cands []*podInfo
	for _, p := range a.pods {
		if movable[p.class.id] && !anchored(p.class) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return
	}
	// largest first, so few moves free a lot
	sort.SliceStable(cands, func(i, j int) bool { return size2(cands[i].class.req) > size2(cands[j].class.req) })
	tried := 0
	for i := a.ptr - 1; i >= 0 && tried < shrinkTargets; i-- {
		o := a.sig.opts[i]
		if o.price >= a.cost || (i+1 < a.ptr && a.sig.opts[i+1].price == o.price) {
			continue
		}
		tried++
		if !s.withinLimits(a, o.t) {
			continue
		}
		pick := pickToFree(a.used, o.t.avail, cands)
		if pick == nil {
			continue
		}
		if s.tryMoves(a, pick, roomy) {
			return
		}
	}
}

// size2 orders pods by cpu then memory.
func size2(v Vec) int64 { return v[dimCPU]<<20 + v[dimMemory]>>20 }

// pickToFree chooses up to shrinkPods pods (largest first) whose removal brings used within avail.
func pickToFree(used, avail Vec, cands []*podInfo) []*podInfo {
	left := used.Clone()
	var pick []*podInfo
	for _, p := range cands {
		if left.LessEq(avail) {
			break
		}
		helps := false
		for d, x := range p.class.req {
			if x > 0 && left[d] > avail[d] {
				helps = true
			}
		}
		if !helps {
			continue
		}
		pick = append(pick, p)
		left.Sub(p.class.req)
		if len(pick) > shrinkPods {
			return nil
		}
	}
	if !left.LessEq(avail) {
		return nil
	}
	return pick
}

type move struct {
	p        *podInfo
	from, to *candidate
}

// tryMoves moves pods off a into room other planned nodes have at their current option; when every pod finds a
// home and a can take a cheaper option (or is left empty), the moves stand. Otherwise they are undone.
func (s *solver) tryMoves(a *candidate, pods []*podInfo, roomy []*candidate) bool {
	var done []move
	ok := true
	for _, p := range pods {
		b := s.findHome(p, a, roomy)
		if b == nil {
			ok = false
			break
		}
		s.movePod(p, a, b)
		done = append(done, move{p: p, from: a, to: b})
	}
	if ok && s.reprice(a) {
		return true
	}
	for i := len(done) - 1; i >= 0; i-- {
		s.movePod(done[i].p, done[i].to, done[i].from)
	}
	return false
}

// tryEmpty moves every pod off a onto other planned nodes, each to the one whose price rises least (a node with
// room at its current option first), and keeps the moves when the rises sum to less than a's price.
func (s *solver) tryEmpty(a *candidate, pods []*podInfo) bool {
	type grown struct {
		n    *candidate
		ptr  int
		cost float64
	}
	var done []move
	var undo []grown
	rise := 0.0
	ok := true
	for _, p := range pods {
		b, ptr := s.cheapestHome(p, a)
		if b == nil || rise+b.sig.opts[ptr].price-b.cost >= a.cost {
			ok = false
			break
		}
		if ptr != b.ptr {
			undo = append(undo, grown{b, b.ptr, b.cost})
			rise += b.sig.opts[ptr].price - b.cost
			s.setOption(b, ptr, b.sig.opts[ptr].price)
		}
		s.movePod(p, a, b)
		done = append(done, move{p: p, from: a, to: b})
	}
	if ok && s.reprice(a) && len(a.pods) == 0 {
		return true
	}
	for i := len(done) - 1; i >= 0; i-- {
		s.movePod(done[i].p, done[i].to, done[i].from)
	}
	for i := len(undo) - 1; i >= 0; i-- {
		s.setOption(undo[i].n, undo[i].ptr, undo[i].cost)
	}
	return false
}

// cheapestHome returns the planned node (other than from) that takes p for the smallest price rise, and the option
// it needs, looking at the cheapest nodes first and stopping at the first that needs no rise.
func (s *solver) cheapestHome(p *podInfo, from *candidate) (*candidate, int) {
	c := p.class
	var best *candidate
	bestPtr, bestRise := -1, 0.0
	checked := 0
	for _, b := range s.order {
		if b == from || len(b.pods) == 0 || !Fits(b.used, c.req, b.sig.maxAvl) || !s.sameDomains(c, from, b) {
			continue
		}
		if checked++; checked > moveScan {
			break
		}
		if !s.canMove(c, from, b) {
			continue
		}
		for i := b.ptr; i < len(b.sig.opts); i++ {
			o := b.sig.opts[i]
			if best != nil && o.price-b.cost >= bestRise {
				break
			}
			if Fits(b.used, c.req, o.t.avail) && s.withinLimits(b, o.t) {
				best, bestPtr, bestRise = b, i, o.price-b.cost
				break
			}
		}
		if best != nil && bestRise <= 0 {
			break
		}
	}
	return best, bestPtr
}

// reprice moves a to its cheapest option that holds its pods and reports whether its price dropped.
func (s *solver) reprice(a *candidate) bool {
	if len(a.pods) == 0 {
		s.setOption(a, a.ptr, 0)
		return true
	}
	for i, o := range a.sig.opts[:a.ptr] {
		if a.used.LessEq(o.t.avail) && s.withinLimits(a, o.t) && o.price < a.cost {
			s.setOption(a, i, o.price)
			return true
		}
	}
	return false
}

// setOption points a planned node at option ptr with the given price (0 for a node left empty).
func (s *solver) setOption(n *candidate, ptr int, price float64) {
	pool := n.sig.pool
	if n.cost > 0 {
		pool.used.Sub(n.sig.opts[n.ptr].t.capacity)
	}
	n.ptr = ptr
	if price > 0 {
		pool.used.Add(n.sig.opts[n.ptr].t.capacity)
	} else {
		pool.nodes--
	}
	old := n.cost
	n.cost = price
	s.reorder(n, old)
}

// findHome returns a planned node other than from that can take p at its current option without any change to its
// requirements, or nil.
func (s *solver) findHome(p *podInfo, from *candidate, roomy []*candidate) *candidate {
	c := p.class
	scanned, checked := 0, 0
	for _, b := range roomy {
		if b == from || len(b.pods) == 0 {
			continue
		}
		if scanned++; scanned > moveScan {
			return nil
		}
		if !Fits(b.used, c.req, b.capacityNow()) || !s.sameDomains(c, from, b) {
			continue
		}
		if checked++; checked > moveChecks {
			return nil
		}
		if s.canMove(c, from, b) {
			return b
		}
	}
	return nil
}

// sameDomains reports whether planned nodes from and b are in the same domain of every topology key other than
// hostname that c's groups use, and eligible for the same groups.
func (s *solver) sameDomains(c *class, from, b *candidate) bool {
	for _, kg := range c.cur.topo {
		for _, g := range kg.groups {
			if g.eligible(from) != g.eligible(b) {
				return false
			}
		}
		if kg.key == labelHostname {
			continue
		}
		fa, fb := s.domainChoices(from, kg.key), s.domainChoices(b, kg.key)
		if len(fa) != 1 || len(fb) != 1 || fa[0] != fb[0] {
			return false
		}
	}
	return true
}

// canMove reports whether a pod of c on planned node from may move to planned node b (in the same domains).
func (s *solver) canMove(c *class, from, b *candidate) bool {
	if len(b.sig.pool.minVals) > 0 && s.opts.MinValuesPolicy != MinValuesPolicyBest {
		return false
	}
	if nr := s.narrow(b.sig, c.cur); nr.sig != b.sig {
		return false
	}
	// only hostname counts change: the pod stays in the same domain of every other key
	return s.hostAllows(c, b)
}

// movePod moves p from one planned node to another, keeping resources and hostname topology counts.
func (s *solver) movePod(p *podInfo, from, to *candidate) {
	c := p.class
	for i, q := range from.pods {
		if q == p {
			from.pods = append(from.pods[:i], from.pods[i+1:]...)
			break
		}
	}
	to.pods = append(to.pods, p)
	from.used.Sub(c.req)
	to.used.Add(c.req)
	for ki := range c.cur.topo {
		kg := &c.cur.topo[ki]
		if kg.key != labelHostname {
			continue
		}
		for i, g := range kg.groups {
			isM := kg.isM[i] && g.eligible(from)
			g.unrecordHost(from.idx, kg.isC[i], isM)
			g.record("", to.idx, kg.isC[i], isM)
		}
	}
}

// unrecordHost is the inverse of record for a hostname group.
func (g *group) unrecordHost(node int, isC, isM bool) {
	if isM {
		g.hostCounts[node]--
		g.total--
	}
	if isC {
		g.hostConstrained[node]--
		g.constrainedTotal--
	}
}

// anchored reports whether c has required hostname anti-affinity: such pods rarely find another node, so improve
// moves the pods around them instead.
func anchored(c *class) bool {
	for _, g := range c.antiHard {
		if g.key == labelHostname {
			return true
		}
	}
	return false
}
