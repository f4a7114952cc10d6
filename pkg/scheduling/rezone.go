package scheduling

import (
	"sort"
	"strconv"
)

// Limits on the rezone step (see rezone).
const (
	// rezoneTries caps the partners tried for one pod in a swap.
	rezoneTries = 16
	// rezoneScan caps the pods gather looks at to find those partners.
	rezoneScan = 256
	// rezoneBack caps the nodes looked at to find one to move out of the cheap zone again.
	rezoneBack = 64
	// rezoneSample is about how many nodes are priced in every zone to choose the cheap zone.
	rezoneSample = 512
	// rezoneRepairSteps caps the repair's steps, per planned node (plus 16).
	rezoneRepairSteps = 0.25
)

// rezone is the last step of the improvement pass: it pins planned nodes to a cheaper zone where the zone topology
// spread constraints, checked on the final counts, allow it. Placement keeps every pod a zone spread selector matches
// balanced across the zones, so that the pods the constraint binds always find a zone; but in the final plan only
// the bound pods' skew has to hold, so the matching pods that carry no zone constraint may pile up in a zone that
// holds no pod the constraint binds. The cheap zone is the one where pinning every node would save most (judged on a
// sample of the nodes). Stages:
//
//  1. Bound pods leave the cheap zone: each swaps places with a pod of another zone that has the same requests, is
//     matched by the same zone groups and bound by none. Resources and the zone counts stay as they are; only the
//     bound pod's skew in its new zone is checked.
//  2. Bound pods gather: within each other zone, the bound pods of a node holding few of them swap places with
//     unbound pods of the same requests on nodes holding more, until the node holds none (or nothing is kept).
//  3. Nodes move: every node without bound pods is pinned to the cheap zone, then a repair brings every zone spread
//     group back within its skew by swapping pods of equal requests between the zones and, when no swap helps, by
//     pinning a moved node to another zone again. When the repair fails, the stage is undone and nodes move one at a
//     time instead, each only when every group it touches still holds.
//
// Swaps obey the rules of improve's moves: the receiving node's requirements already admit the pod and the hostname
// spread and anti-affinity counts are checked. Only pods improve may move take part, and not those with zone pod
// affinity or anti-affinity, with topology groups on other keys than the zone and the hostname, or with a spread
// group that counts only some nodes; their nodes keep their zone. Only pinning changes prices, and every change kept
// lowers the plan's price.
func (s *solver) rezone(planned []*candidate, movable []bool) {
	rz := s.newRezoner(planned, movable)
	if rz == nil {
		return
	}
	rz.evacuate()
	rz.gather()
	if !rz.relocate() {
		rz.move()
	}
	if rz.pinned {
		// setZone leaves the order by price to this
		sort.SliceStable(s.order, func(i, j int) bool {
			a, b := s.order[i], s.order[j]
			if a.cost != b.cost {
				return a.cost < b.cost
			}
			return a.idx < b.idx
		})
	}
}

// zoneRole is what a class may do in rezone.
type zoneRole int8

const (
	zoneFixed zoneRole = iota // not moved, and its node keeps its zone
	zoneFree                  // bound by no zone group
	zoneBound                 // bound by a zone spread group
)

// slot is a pod on a planned node.
type slot struct {
	p *podInfo
	n *candidate
}

type rezoner struct {
	s       *solver
	planned []*candidate
	// by class id: the role, the requests (rk), the requests and the zone groups matching (zk: pods of equal zk swap
	// without changing any zone count), and how the zone groups concern the class (gk)
	role       []zoneRole
	rk, zk, gk []int
	nrk, nzk   int
	cheap      string
	// by node index: the zone of each planned node whose zone is decided, and its count of bound pods
	zone  []string
	bound []int
	// repin caches a sig moved to another zone (nil: none); zones caches the zones a pool launches into
	repin map[pinKey]*sig
	zones map[*poolInfo][]string
	// pinned says some node's price changed, so s.order needs sorting
	pinned bool
}

func (s *solver) newRezoner(planned []*candidate, movable []bool) *rezoner {
	nc := len(s.classes)
	rz := &rezoner{s: s, planned: planned, role: make([]zoneRole, nc), rk: make([]int, nc), zk: make([]int, nc),
		gk: make([]int, nc), zone: make([]string, len(s.nodes)), bound: make([]int, len(s.nodes)), repin: map[pinKey]*sig{},
		zones: map[*poolInfo][]string{}}
	ids := [3]map[string]int{{}, {}, {}}
	intern := func(i int, k string) int {
		id, ok := ids[i][k]
		if !ok {
			id = len(ids[i])
			ids[i][k] = id
		}
		return id
	}
	found := false
	for _, c := range s.classes {
		role, req, matched, groups := classRole(c, movable)
		rz.role[c.id] = role
		rz.rk[c.id] = intern(0, req)
		rz.zk[c.id] = intern(1, req+matched)
		rz.gk[c.id] = intern(2, groups)
		found = found || role == zoneBound
	}
	if !found {
		return nil
	}
	rz.nrk, rz.nzk = len(ids[0]), len(ids[1])
	// the cheap zone, by the savings of a sample of the nodes
	saving := map[string]float64{}
	stride := max(1, len(planned)/rezoneSample)
	for i, n := range planned {
		z := rz.nodeZone(n)
		if z == "" {
			continue
		}
		rz.zone[n.idx] = z
		for _, p := range n.pods {
			if rz.role[p.class.id] == zoneBound {
				rz.bound[n.idx]++
			}
		}
		if i%stride != 0 || !rz.mayRepin(n) {
			continue
		}
		for _, v := range rz.poolZones(n.sig.pool) {
			if g, ptr := rz.option(n, v); g != nil && g.opts[ptr].price < n.cost {
				saving[v] += n.cost - g.opts[ptr].price
			}
		}
	}
	zones := make([]string, 0, len(saving))
	for z := range saving {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	for _, z := range zones {
		if rz.cheap == "" || saving[z] > saving[rz.cheap] {
			rz.cheap = z
		}
	}
	if rz.cheap == "" {
		return nil
	}
	return rz
}

// classRole sorts a class for rezone and returns, as strings, its requests, the zone groups matching it, and those
// and the zone groups binding it.
func classRole(c *class, movable []bool) (role zoneRole, req, matched, groups string) {
	var b []byte
	for _, x := range c.req {
		b = strconv.AppendInt(append(b, ','), x, 10)
	}
	req = string(b)
	if !movable[c.id] || anchored(c) {
		return zoneFixed, req, "", ""
	}
	role = zoneFree
	var m []byte
	b = b[:0]
	for _, kg := range c.cur.topo {
		if kg.key == labelHostname {
			continue
		}
		if kg.key != labelZone {
			return zoneFixed, req, "", ""
		}
		for i, g := range kg.groups {
			if g.kind != kindSpread || !g.everywhere() {
				return zoneFixed, req, "", ""
			}
			if kg.isC[i] {
				role = zoneBound
				b = strconv.AppendInt(append(b, "|c"...), int64(g.id), 10)
			}
			if kg.isM[i] {
				m = strconv.AppendInt(append(m, '|'), int64(g.id), 10)
				b = strconv.AppendInt(append(b, "|m"...), int64(g.id), 10)
			}
		}
	}
	return role, req, string(m), string(b)
}

// everywhere reports whether the group counts pods on every node (no node filter some nodes could fail).
func (g *group) everywhere() bool {
	if g.taintsHonor {
		return false
	}
	for _, t := range g.filter {
		if len(t) == 0 {
			return true
		}
	}
	return g.filter == nil
}

// nodeZone returns the zone of planned node n when it has pods and its zone is decided, otherwise "".
func (rz *rezoner) nodeZone(n *candidate) string {
	if len(n.pods) == 0 {
		return ""
	}
	zs := rz.s.domainChoices(n, labelZone)
	if len(zs) != 1 {
		return ""
	}
	return zs[0]
}

// mayRepin reports whether planned node n may be pinned to another zone: its zone is decided, its pool has no
// minValues, and it holds no pod of a fixed class other than pods with hostname anti-affinity (which rezone does not
// move but which do not care about the zone either).
func (rz *rezoner) mayRepin(n *candidate) bool {
	if rz.zone[n.idx] == "" || len(n.sig.pool.minVals) > 0 {
		return false
	}
	for _, p := range n.pods {
		if rz.role[p.class.id] == zoneFixed && !rz.zoneBlind(p.class) {
			return false
		}
	}
	return true
}

// zoneBlind reports whether pods of c may go to any zone: c is movable and no group on a key other than the hostname
// concerns it.
func (rz *rezoner) zoneBlind(c *class) bool {
	if c.err != "" || len(c.ports) > 0 || len(c.volumes) > 0 || c.maxLevel > 0 || c.level > 0 {
		return false
	}
	for _, kg := range c.cur.topo {
		if kg.key != labelHostname {
			return false
		}
	}
	return true
}

// poolZones returns the zones pool p launches into.
func (rz *rezoner) poolZones(p *poolInfo) []string {
	zs, ok := rz.zones[p]
	if !ok {
		zs = rz.s.launchableValues(p, p.reqs, labelZone)
		rz.zones[p] = zs
	}
	return zs
}

// option returns node n's sig with its zone replaced by zone, and the index of its cheapest option that holds n's
// pods within the pool's limits, or nil when n's pods or its pool do not allow the zone.
func (rz *rezoner) option(n *candidate, zone string) (*sig, int) {
	s := rz.s
	k := pinKey{sig: n.sig.id, key: labelZone, value: zone}
	g, ok := rz.repin[k]
	if !ok {
		g = nil
		if pr := n.sig.pool.reqs[labelZone]; pr == nil || pr.Has(zone) {
			reqs := n.sig.reqs.Copy()
			reqs[labelZone] = In(labelZone, zone)
			if ng := s.sigFor(n.sig.pool, reqs); ng.err == "" && len(ng.opts) > 0 {
				g = ng
			}
		}
		rz.repin[k] = g
	}
	if g == nil {
		return nil, -1
	}
	for _, p := range n.pods {
		if nr := s.narrow(g, p.class.cur); nr.sig != g {
			return nil, -1
		}
	}
	for i, o := range g.opts {
		if n.used.LessEq(o.t.avail) && s.withinLimits(n, o.t) {
			return g, i
		}
	}
	return nil, -1
}

// evacuate swaps bound pods out of the cheap zone (stage 1), each into the zone where its groups bind fewest pods
// first, so that the bound pods end up spread.
func (rz *rezoner) evacuate() {
	var zones []string
	byZone := map[string][][]slot{} // unbound pods by zone and zk
	for _, n := range rz.planned {
		z := rz.zone[n.idx]
		if z == "" || z == rz.cheap {
			continue
		}
		free, ok := byZone[z]
		if !ok {
			free = make([][]slot, rz.nzk)
			byZone[z] = free
			zones = append(zones, z)
		}
		for _, p := range n.pods {
			if rz.role[p.class.id] == zoneFree {
				k := rz.zk[p.class.id]
				free[k] = append(free[k], slot{p, n})
			}
		}
	}
	sort.Strings(zones)
	order := make([]string, len(zones))
	rz.eachBoundInCheap(func(x *candidate, p *podInfo) {
		copy(order, zones)
		sort.SliceStable(order, func(i, j int) bool { return boundIn(p.class, order[i]) < boundIn(p.class, order[j]) })
		k := rz.zk[p.class.id]
		done := false
		for _, z := range order {
			list := byZone[z][k]
			for i, tries := len(list)-1, 0; i >= 0 && tries < rezoneTries; i, tries = i-1, tries+1 {
				if rz.swap(p, x, list[i].p, list[i].n, true) {
					list[i] = list[len(list)-1]
					byZone[z][k] = list[:len(list)-1]
					done = true
					break
				}
			}
			if done {
				break
			}
		}
	})
}

// gather swaps bound pods off the nodes of a zone that hold few of them (stage 2).
func (rz *rezoner) gather() {
	byZone := map[string][]*candidate{}
	var zones []string
	for _, n := range rz.planned {
		z := rz.zone[n.idx]
		if z == "" || z == rz.cheap {
			continue
		}
		if _, ok := byZone[z]; !ok {
			zones = append(zones, z)
		}
		byZone[z] = append(byZone[z], n)
	}
	sort.Strings(zones)
	type traded struct {
		p, q *podInfo
		y    *candidate
		i    int
	}
	var done []traded
	var pods []*podInfo
	for _, z := range zones {
		nodes := byZone[z]
		free := make([][]slot, rz.nrk)
		var sources []*candidate
		for _, n := range nodes {
			for _, p := range n.pods {
				if rz.role[p.class.id] == zoneFree {
					k := rz.rk[p.class.id]
					free[k] = append(free[k], slot{p, n})
				}
			}
			if rz.bound[n.idx] > 0 && rz.mayRepin(n) {
				sources = append(sources, n)
			}
		}
		sort.SliceStable(sources, func(i, j int) bool { return rz.bound[sources[i].idx] < rz.bound[sources[j].idx] })
		for _, x := range sources {
			if rz.bound[x.idx] == 0 || rz.s.ctx.Err() != nil {
				continue
			}
			pods = append(pods[:0], x.pods...)
			done = done[:0]
			for _, p := range pods {
				if rz.role[p.class.id] != zoneBound {
					continue
				}
				list := free[rz.rk[p.class.id]]
				ok := false
				for i, tries, scanned := len(list)-1, 0, 0; i >= 0 && tries < rezoneTries && scanned < rezoneScan; i, scanned = i-1, scanned+1 {
					y := list[i].n
					if y == x || rz.bound[y.idx] < rz.bound[x.idx] {
						continue
					}
					tries++
					if rz.swap(p, x, list[i].p, y, false) {
						done = append(done, traded{p, list[i].p, y, i})
						list[i] = slot{list[i].p, x}
						ok = true
						break
					}
				}
				if !ok {
					break
				}
			}
			if rz.bound[x.idx] == 0 {
				continue
			}
			// the node keeps bound pods: the swaps only used up room for them elsewhere
			for i := len(done) - 1; i >= 0; i-- {
				d := done[i]
				rz.trade(d.q, x, d.p, d.y)
				free[rz.rk[d.q.class.id]][d.i] = slot{d.q, d.y}
			}
		}
	}
}

// rezoneOp is one logged change of stage 3: a swap (p was on x, q on y) or a node pinned to another zone (n was
// under sig g at option ptr in zone).
type rezoneOp struct {
	p, q *podInfo
	x, y *candidate
	n    *candidate
	g    *sig
	ptr  int
	zone string
}

// relocate is stage 3 with the repair; it reports whether it kept anything.
func (rz *rezoner) relocate() bool {
	var log []rezoneOp
	before := rz.price()
	// bound pods left in the cheap zone swap with any unbound pod of equal requests elsewhere, on nodes with bound
	// pods first; the repair evens out the counts
	rz.eachBoundInCheap(func(x *candidate, p *podInfo) {
		tries, done := 0, false
		for k := 0; k < 2*len(rz.planned) && !done && tries < rezoneTries; k++ {
			y := rz.planned[k%len(rz.planned)]
			if z := rz.zone[y.idx]; z == "" || z == rz.cheap || (rz.bound[y.idx] == 0) == (k < len(rz.planned)) {
				continue
			}
			for _, q := range y.pods {
				if rz.role[q.class.id] != zoneFree || !sameReq(p.class, q.class) {
					continue
				}
				tries++
				if rz.swap(p, x, q, y, false) {
					log = append(log, rezoneOp{p: p, x: x, q: q, y: y})
					done = true
					break
				}
			}
		}
	})
	var moved []*candidate
	for _, n := range rz.planned {
		if rz.zone[n.idx] == "" || rz.zone[n.idx] == rz.cheap || rz.bound[n.idx] > 0 || !rz.mayRepin(n) {
			continue
		}
		g, ptr := rz.option(n, rz.cheap)
		if g == nil || g.opts[ptr].price >= n.cost {
			continue
		}
		log = append(log, rezoneOp{n: n, g: n.sig, ptr: n.ptr, zone: rz.zone[n.idx]})
		rz.setZone(n, rz.cheap, g, ptr)
		moved = append(moved, n)
	}
	if len(moved) == 0 {
		rz.undo(log)
		return false
	}
	var groups []*group
	for _, g := range rz.s.groups {
		if g.kind == kindSpread && g.key == labelZone {
			groups = append(groups, g)
		}
	}
	// nodes the repair pinned to a dearer zone than their own may cost more than the moves saved
	if !rz.repair(groups, moved, &log) || rz.price() > before-1e-9 {
		rz.undo(log)
		return false
	}
	return true
}

// price is the planned nodes' total price.
func (rz *rezoner) price() float64 {
	x := 0.0
	for _, n := range rz.planned {
		if len(n.pods) > 0 {
			x += n.cost
		}
	}
	return x
}

// undo reverts the logged changes, last first.
func (rz *rezoner) undo(log []rezoneOp) {
	for i := len(log) - 1; i >= 0; i-- {
		o := log[i]
		if o.n != nil {
			rz.setZone(o.n, o.zone, o.g, o.ptr)
		} else {
			rz.trade(o.q, o.x, o.p, o.y)
		}
	}
}

// repair swaps pods of equal requests between nodes outside the cheap zone and nodes in it until every zone spread
// group holds. Each step takes the group and zone furthest above its skew and makes the swap that lowers the total
// excess most among those that can help there: a pod the group binds out of the cheap zone, a pod it matches out of
// the zone, or one into the zone where it counts least. When no swap helps, a node moved to the cheap zone that holds
// pods the group matches goes to that zone where it counts least (moveBack).
func (rz *rezoner) repair(groups []*group, moved []*candidate, log *[]rezoneOp) bool {
	s := rz.s
	// unbound pods outside the cheap zone; those in it by zk, and the zk present by requests
	var out []slot
	in := make([][]slot, rz.nzk)
	inKeys := make([][]int, rz.nrk)
	addIn := func(sl slot) {
		k := rz.zk[sl.p.class.id]
		if len(in[k]) == 0 && !containsInt(inKeys[rz.rk[sl.p.class.id]], k) {
			inKeys[rz.rk[sl.p.class.id]] = append(inKeys[rz.rk[sl.p.class.id]], k)
		}
		in[k] = append(in[k], sl)
	}
	for _, n := range rz.planned {
		z := rz.zone[n.idx]
		if z == "" {
			continue
		}
		for _, p := range n.pods {
			if rz.role[p.class.id] != zoneFree {
				continue
			}
			if z == rz.cheap {
				addIn(slot{p, n})
			} else {
				out = append(out, slot{p, n})
			}
		}
	}
	// a swap's gain depends only on the zone and on how the zone groups concern the two pods
	type gainKey struct {
		z    string
		a, b int
	}
	cache := map[gainKey]int{}
	gain := func(a, b *podInfo, za string) int {
		k := gainKey{za, rz.gk[a.class.id], rz.gk[b.class.id]}
		if g, ok := cache[k]; ok {
			return g
		}
		before := pairExcess(a.class, b.class)
		shiftZone(a.class, za, rz.cheap)
		shiftZone(b.class, rz.cheap, za)
		g := before - pairExcess(a.class, b.class)
		shiftZone(a.class, rz.cheap, za)
		shiftZone(b.class, za, rz.cheap)
		cache[k] = g
		return g
	}
	type pair struct {
		a    int  // index in out
		k    int  // zk of the pods in the cheap zone to swap with
		b    slot // or this pod the worst group binds in the cheap zone
		gain int
	}
	var cands []pair
	for steps := int(rezoneRepairSteps*float64(len(rz.planned))) + 16; steps > 0; steps-- {
		if s.ctx.Err() != nil {
			return false
		}
		var worst *group
		wz, wx := "", 0
		for _, g := range groups {
			m := g.minCount("", 0)
			for _, d := range g.universe {
				if e := g.counts[d] - m - g.maxSkew; g.constrained[d] > 0 && e > wx {
					worst, wz, wx = g, d, e
				}
			}
		}
		if worst == nil {
			return true
		}
		low := ""
		for i, d := range worst.universe {
			if low == "" || worst.ucount[i] < worst.counts[low] {
				low = d
			}
		}
		cands = cands[:0]
		clear(cache)
		if wz == rz.cheap {
			for _, n := range rz.planned {
				if rz.zone[n.idx] != rz.cheap {
					continue
				}
				for _, q := range n.pods {
					if rz.role[q.class.id] != zoneBound || !bindsClass(worst, q.class) {
						continue
					}
					for ai, a := range out {
						// every bound pod has to leave before the excess drops: any gain will do
						if sameReq(a.p.class, q.class) {
							cands = append(cands, pair{a: ai, k: -1, b: slot{q, n}, gain: gain(a.p, q, rz.zone[a.n.idx])})
						}
					}
				}
			}
		} else {
			for ai, a := range out {
				za := rz.zone[a.n.idx]
				var want bool // whether the pod from the cheap zone should match the worst group
				switch {
				case za == wz && matchesClass(worst, a.p.class):
					want = false
				case za == low && low != rz.cheap && !matchesClass(worst, a.p.class):
					want = true
				default:
					continue
				}
				for _, k := range inKeys[rz.rk[a.p.class.id]] {
					list := in[k]
					if len(list) == 0 || matchesClass(worst, list[0].p.class) != want {
						continue
					}
					if g := gain(a.p, list[len(list)-1].p, za); g > 0 {
						cands = append(cands, pair{a: ai, k: k, gain: g})
					}
				}
			}
		}
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].gain > cands[j].gain })
		done := false
		for _, c := range cands {
			a := out[c.a]
			if c.k < 0 {
				if done = rz.swap(a.p, a.n, c.b.p, c.b.n, false); done {
					*log = append(*log, rezoneOp{p: a.p, x: a.n, q: c.b.p, y: c.b.n})
					addIn(slot{a.p, c.b.n})
					out[c.a] = out[len(out)-1]
					out = out[:len(out)-1]
					break
				}
				continue
			}
			list := in[c.k]
			for i, tries := len(list)-1, 0; i >= 0 && tries < rezoneTries; i, tries = i-1, tries+1 {
				b := list[i]
				if !rz.swap(a.p, a.n, b.p, b.n, false) {
					continue
				}
				*log = append(*log, rezoneOp{p: a.p, x: a.n, q: b.p, y: b.n})
				list[i] = list[len(list)-1]
				in[c.k] = list[:len(list)-1]
				addIn(slot{a.p, b.n})
				out[c.a] = slot{b.p, a.n}
				done = true
				break
			}
			if done {
				break
			}
		}
		if done {
			continue
		}
		if low == rz.cheap {
			return false
		}
		n, g, ptr := rz.moveBack(moved, worst, low)
		if n == nil {
			return false
		}
		*log = append(*log, rezoneOp{n: n, g: n.sig, ptr: n.ptr, zone: rz.cheap})
		rz.setZone(n, low, g, ptr)
		for _, p := range n.pods {
			if rz.role[p.class.id] != zoneFree {
				continue
			}
			k := rz.zk[p.class.id]
			for i, sl := range in[k] {
				if sl.p == p {
					in[k] = append(in[k][:i], in[k][i+1:]...)
					break
				}
			}
			out = append(out, slot{p, n})
		}
	}
	return false
}

// moveBack returns, among the first rezoneBack nodes moved into the cheap zone that hold a pod group worst matches,
// the one whose pinning to zone low lowers the skew excess most (the smallest price rise of equals), with its sig
// and option; nil when none lowers it.
func (rz *rezoner) moveBack(moved []*candidate, worst *group, low string) (*candidate, *sig, int) {
	var best *candidate
	var bestSig *sig
	bestPtr, bestGain, bestRise := 0, 0, 0.0
	scanned := 0
	for _, n := range moved {
		if rz.zone[n.idx] != rz.cheap || scanned >= rezoneBack {
			continue
		}
		match := false
		for _, p := range n.pods {
			match = match || matchesClass(worst, p.class)
		}
		if !match {
			continue
		}
		scanned++
		before := nodeExcess(n)
		for _, z := range rz.poolZones(n.sig.pool) {
			if z != low {
				continue
			}
			g, ptr := rz.option(n, z)
			if g == nil {
				continue
			}
			for _, p := range n.pods {
				shiftZone(p.class, rz.cheap, z)
			}
			gain := before - nodeExcess(n)
			for _, p := range n.pods {
				shiftZone(p.class, z, rz.cheap)
			}
			rise := g.opts[ptr].price - n.cost
			if gain > 0 && (best == nil || gain > bestGain || (gain == bestGain && rise < bestRise)) {
				best, bestSig, bestPtr, bestGain, bestRise = n, g, ptr, gain, rise
			}
		}
	}
	return best, bestSig, bestPtr
}

// move pins nodes one at a time to a cheaper zone, cheapest first, when every zone group of their pods still holds
// (stage 3 without the repair).
func (rz *rezoner) move() {
	type cand struct {
		n    *candidate
		best float64
	}
	var cands []cand
	for _, n := range rz.planned {
		if !rz.mayRepin(n) {
			continue
		}
		best := 0.0
		for _, v := range rz.poolZones(n.sig.pool) {
			if g, ptr := rz.option(n, v); g != nil && n.cost-g.opts[ptr].price > best {
				best = n.cost - g.opts[ptr].price
			}
		}
		if best > 0 {
			cands = append(cands, cand{n, best})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].best > cands[j].best })
	type zoneOpt struct {
		zone string
		g    *sig
		ptr  int
	}
	var opts []zoneOpt
	for round := 0; round < 3; round++ {
		moved := false
		for _, c := range cands {
			n := c.n
			if rz.s.ctx.Err() != nil {
				return
			}
			opts = opts[:0]
			for _, v := range rz.poolZones(n.sig.pool) {
				if g, ptr := rz.option(n, v); g != nil && g.opts[ptr].price < n.cost {
					opts = append(opts, zoneOpt{v, g, ptr})
				}
			}
			sort.SliceStable(opts, func(i, j int) bool { return opts[i].g.opts[opts[i].ptr].price < opts[j].g.opts[opts[j].ptr].price })
			for _, o := range opts {
				from, g, ptr := rz.zone[n.idx], n.sig, n.ptr
				rz.setZone(n, o.zone, o.g, o.ptr)
				if nodeExcess(n) == 0 {
					moved = true
					break
				}
				rz.setZone(n, from, g, ptr)
			}
		}
		if !moved {
			return
		}
	}
}

// setZone pins node n to zone under sig g at option ptr, moving its pods' zone counts, without checks (and without
// keeping s.order: rezone sorts it at the end).
func (rz *rezoner) setZone(n *candidate, zone string, g *sig, ptr int) {
	for _, p := range n.pods {
		shiftZone(p.class, rz.zone[n.idx], zone)
	}
	pool := n.sig.pool
	pool.used.Sub(n.sig.opts[n.ptr].t.capacity)
	n.sig, n.ptr = g, ptr
	pool.used.Add(g.opts[ptr].t.capacity)
	n.cost = g.opts[ptr].price
	rz.zone[n.idx] = zone
	rz.pinned = true
}

// swap exchanges pod p on node x and pod q on node y (equal requests) when the nodes' requirements already admit
// them, the hostname groups allow it and, with check, every zone group of the two still holds.
func (rz *rezoner) swap(p *podInfo, x *candidate, q *podInfo, y *candidate, check bool) bool {
	s := rz.s
	if !s.admits(p.class, y) || !s.admits(q.class, x) {
		return false
	}
	s.hostShift(p.class, x, false)
	s.hostShift(q.class, y, false)
	ok := s.hostAllows(p.class, y)
	if ok {
		s.hostShift(p.class, y, true)
		if ok = s.hostAllows(q.class, x); !ok {
			s.hostShift(p.class, y, false)
		}
	}
	if !ok {
		s.hostShift(p.class, x, true)
		s.hostShift(q.class, y, true)
		return false
	}
	s.hostShift(q.class, x, true)
	zx, zy := rz.zone[x.idx], rz.zone[y.idx]
	shiftZone(p.class, zx, zy)
	shiftZone(q.class, zy, zx)
	if check && zx != zy && pairExcess(p.class, q.class) > 0 {
		shiftZone(p.class, zy, zx)
		shiftZone(q.class, zx, zy)
		s.hostShift(p.class, y, false)
		s.hostShift(q.class, x, false)
		s.hostShift(p.class, x, true)
		s.hostShift(q.class, y, true)
		return false
	}
	rz.place(p, x, q, y)
	return true
}

// trade exchanges p on x and q on y without checks (to undo a swap).
func (rz *rezoner) trade(p *podInfo, x *candidate, q *podInfo, y *candidate) {
	s := rz.s
	s.hostShift(p.class, x, false)
	s.hostShift(q.class, y, false)
	s.hostShift(p.class, y, true)
	s.hostShift(q.class, x, true)
	shiftZone(p.class, rz.zone[x.idx], rz.zone[y.idx])
	shiftZone(q.class, rz.zone[y.idx], rz.zone[x.idx])
	rz.place(p, x, q, y)
}

// place puts q where p was on x and p where q was on y, keeping the counts of bound pods.
func (rz *rezoner) place(p *podInfo, x *candidate, q *podInfo, y *candidate) {
	for i, o := range x.pods {
		if o == p {
			x.pods[i] = q
			break
		}
	}
	for i, o := range y.pods {
		if o == q {
			y.pods[i] = p
			break
		}
	}
	if rz.role[p.class.id] == zoneBound {
		rz.bound[x.idx]--
		rz.bound[y.idx]++
	}
	if rz.role[q.class.id] == zoneBound {
		rz.bound[y.idx]--
		rz.bound[x.idx]++
	}
}

// admits reports whether planned node n's requirements already admit class c (as canMove asks).
func (s *solver) admits(c *class, n *candidate) bool {
	if len(n.sig.pool.minVals) > 0 && s.opts.MinValuesPolicy != MinValuesPolicyBest {
		return false
	}
	return s.narrow(n.sig, c.cur).sig == n.sig
}

// hostShift records (add) or unrecords a pod of class c on node n in its hostname groups.
func (s *solver) hostShift(c *class, n *candidate, add bool) {
	for _, kg := range c.cur.topo {
		if kg.key != labelHostname {
			continue
		}
		for i, g := range kg.groups {
			isM := kg.isM[i] && g.eligible(n)
			if add {
				g.record("", n.idx, kg.isC[i], isM)
			} else {
				g.unrecordHost(n.idx, kg.isC[i], isM)
			}
		}
	}
}

// hostAllows reports whether the hostname groups of c let one more of its pods onto node n.
func (s *solver) hostAllows(c *class, n *candidate) bool {
	for _, kg := range c.cur.topo {
		if kg.key != labelHostname {
			continue
		}
		for i, g := range kg.groups {
			if !g.allows("", n.idx, kg.isC[i], kg.isM[i] && g.eligible(n), false) {
				return false
			}
		}
	}
	return true
}

// shiftZone moves the zone counts of a pod of class c from zone from to zone to.
func shiftZone(c *class, from, to string) {
	if from == to {
		return
	}
	for _, kg := range c.cur.topo {
		if kg.key != labelZone {
			continue
		}
		for i, g := range kg.groups {
			g.unrecordZone(from, kg.isC[i], kg.isM[i])
			g.record(to, -1, kg.isC[i], kg.isM[i])
		}
	}
}

// unrecordZone is the inverse of record for a group on a key other than the hostname.
func (g *group) unrecordZone(domain string, isC, isM bool) {
	g.version++
	if isM {
		g.counts[domain]--
		g.total--
		if i, ok := g.uindex[domain]; ok {
			g.ucount[i]--
		}
	}
	if isC {
		g.constrained[domain]--
		g.constrainedTotal--
	}
}

// skewExcess is how far the counts of the domains holding pods the spread group binds are above the smallest count
// plus maxSkew, summed over those domains (0: the group holds for every pod it binds).
func (g *group) skewExcess() int {
	m := g.minCount("", 0)
	x := 0
	for d, k := range g.constrained {
		if e := g.counts[d] - m - g.maxSkew; k > 0 && e > 0 {
			x += e
		}
	}
	return x
}

// pairExcess is the skew excess of the zone groups of classes a and b, each group once.
func pairExcess(a, b *class) int {
	x := 0
	for _, kg := range a.cur.topo {
		if kg.key == labelZone {
			for _, g := range kg.groups {
				x += g.skewExcess()
			}
		}
	}
	for _, kg := range b.cur.topo {
		if kg.key != labelZone {
			continue
		}
		for _, g := range kg.groups {
			if !matchesClass(g, a) && !bindsClass(g, a) {
				x += g.skewExcess()
			}
		}
	}
	return x
}

// boundIn is how many pods the zone groups binding c bind in zone, summed over the groups.
func boundIn(c *class, zone string) int {
	x := 0
	for _, kg := range c.cur.topo {
		if kg.key != labelZone {
			continue
		}
		for i, g := range kg.groups {
			if kg.isC[i] {
				x += g.constrained[zone]
			}
		}
	}
	return x
}

// nodeExcess is the skew excess of the zone groups of n's pods, each group once.
func nodeExcess(n *candidate) int {
	var seen []*group
	x := 0
	for _, p := range n.pods {
		for _, kg := range p.class.cur.topo {
			if kg.key != labelZone {
				continue
			}
			for _, g := range kg.groups {
				if !containsGroup(seen, g) {
					seen = append(seen, g)
					x += g.skewExcess()
				}
			}
		}
	}
	return x
}

// sameReq reports whether classes a and b request the same.
func sameReq(a, b *class) bool { return a.req.LessEq(b.req) && b.req.LessEq(a.req) }

// matchesClass reports whether group g counts pods of class c.
func matchesClass(g *group, c *class) bool {
	i, kg := topoIndex(g, c)
	return kg != nil && kg.isM[i]
}

// bindsClass reports whether group g binds pods of class c.
func bindsClass(g *group, c *class) bool {
	i, kg := topoIndex(g, c)
	return kg != nil && kg.isC[i]
}

// topoIndex finds group g among c's topology groups.
func topoIndex(g *group, c *class) (int, *keyGroups) {
	for ki := range c.cur.topo {
		kg := &c.cur.topo[ki]
		if kg.key != g.key {
			continue
		}
		for i, o := range kg.groups {
			if o == g {
				return i, kg
			}
		}
	}
	return 0, nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// eachBoundInCheap calls f for every pod a zone spread group binds on a planned node in the cheap zone, going over a
// copy of each node's pods so that f may swap them away.
func (rz *rezoner) eachBoundInCheap(f func(x *candidate, p *podInfo)) {
	var pods []*podInfo
	for _, x := range rz.planned {
		if rz.zone[x.idx] != rz.cheap || rz.bound[x.idx] == 0 {
			continue
		}
		pods = append(pods[:0], x.pods...)
		for _, p := range pods {
			if rz.role[p.class.id] == zoneBound {
				f(x, p)
			}
		}
	}
}
