package scheduling

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Limits on the repack step (see repack).
const (
	// repackNodes is how many nodes one repack takes the movable pods off.
	repackNodes = 16
	// repackReceivers is how many other nodes of the same zone, those with most room first, may take those pods.
	repackReceivers = 32
	// repackAgain is the share of the planned nodes, worst first, that repack takes again after exchange.
	repackAgain = 0.5
	// repackLast is the share repack takes after the second exchange.
	repackLast = 0.25
)

// repack is a ruin-and-recreate step of the improvement pass. It takes the planned nodes whose price is furthest
// above what their pods are worth (by the lower bound's dual prices, classWorth; without a bound, by the cheapest
// fraction of one of the node's own options, fractionalPrice), repackNodes at a time from one zone, lifts every pod
// improve may move off them, shrinks them to what their remaining pods need, and puts the lifted pods back one by
// one, largest first, each on the node (one of the set, or one of the repackReceivers other nodes of the zone with
// the most room) whose price rises least, the tightest fit among equals (roomLeft). The result is kept when the nodes
// involved cost less than before, and undone otherwise. Pods are put only where a move of improve could put them
// (same domains for every key but the hostname, requirements that already admit the pod, hostname spread and
// anti-affinity counts), so every plan stays valid. NodePools with limits or minValues are left alone.
//
// share bounds the sets tried to share × planned nodes / repackNodes (1: every node once).
func (s *solver) repack(planned []*candidate, movable []bool, share float64) {
	type waste struct {
		n     *candidate
		waste float64
	}
	buckets := map[string][]*candidate{}
	var bad []waste
	worth := s.classWorth()
	for _, n := range planned {
		if len(n.pods) == 0 || !s.repackable(n) {
			continue
		}
		k := strings.Join(s.domainChoices(n, labelZone), ",")
		buckets[k] = append(buckets[k], n)
		w := n.cost - s.fractionalPrice(n)
		if worth != nil {
			w = n.cost
			for _, p := range n.pods {
				w -= worth[p.class.id]
			}
		}
		if w > 1e-9 {
			bad = append(bad, waste{n, w})
		}
	}
	sort.SliceStable(bad, func(i, j int) bool { return bad[i].waste > bad[j].waste })
	tries := int(math.Ceil(float64(len(planned)) * share / repackNodes))
	used := map[*candidate]bool{}
	for _, b := range bad {
		if tries <= 0 || s.ctx.Err() != nil {
			return
		}
		if used[b.n] {
			continue
		}
		// the set: this node and the next worst ones of its zone not yet used
		k := strings.Join(s.domainChoices(b.n, labelZone), ",")
		set := []*candidate{b.n}
		used[b.n] = true
		for _, o := range bad {
			if len(set) >= repackNodes {
				break
			}
			if !used[o.n] && strings.Join(s.domainChoices(o.n, labelZone), ",") == k {
				set = append(set, o.n)
				used[o.n] = true
			}
		}
		tries--
		s.repackSet(set, buckets[k], movable)
	}
}

// repackable reports whether repack may change n: a planned node of a NodePool without limits or minValues.
func (s *solver) repackable(n *candidate) bool {
	p := n.sig.pool
	if len(p.minVals) > 0 || p.limNodes >= 0 {
		return false
	}
	return !slices.Contains(p.limited, true)
}

// fractionalPrice is what n's pods would cost as a fraction of the instance type among n's options that holds
// them for the least: min over options of price times the largest share of its allocatable they use.
func (s *solver) fractionalPrice(n *candidate) float64 {
	best := n.cost
	for _, o := range n.sig.opts[:n.ptr+1] {
		share := 0.0
		for d, u := range n.used {
			if u == 0 {
				continue
			}
			if o.t.avail[d] <= 0 {
				share = 2
				break
			}
			share = max(share, float64(u)/float64(o.t.avail[d]))
		}
		if share > 0 {
			best = min(best, o.price*share)
		}
	}
	return best
}

// frontier lists the options of g no cheaper-or-equal earlier option dominates (holds at least as much of every
// resource), in price order. The cheapest option that holds some pods is always on it, so searches for one need
// look only there.
func (g *sig) frontier() []int {
	if g.front != nil {
		return g.front
	}
	g.front = make([]int, 0, 16)
	for i, o := range g.opts {
		dominated := false
		for _, j := range g.front {
			if o.t.avail.LessEq(g.opts[j].t.avail) {
				dominated = true
				break
			}
		}
		if !dominated {
			g.front = append(g.front, i)
		}
	}
	return g.front
}

// cheapestFit returns the frontier position and price of n's cheapest option that holds its pods (0 and price 0 for
// an empty node), or -1 when none does.
func cheapestFit(n *candidate) (int, float64) {
	if len(n.pods) == 0 {
		return 0, 0
	}
	for k, i := range n.sig.frontier() {
		if o := n.sig.opts[i]; n.used.LessEq(o.t.avail) {
			return k, o.price
		}
	}
	return -1, 0
}

// riseFor is how much n's price rises if it takes req on top of its pods, given its price now and the first
// frontier position that may hold them (none before from does), and the position that does; ok is false when no
// option holds them or the rise is not below limit.
func riseFor(n *candidate, now float64, from int, req Vec, limit float64) (float64, int, bool) {
	front := n.sig.frontier()
	for k := max(from, 0); k < len(front); k++ {
		o := n.sig.opts[front[k]]
		if o.price-now >= limit {
			return 0, 0, false
		}
		if Fits(n.used, req, o.t.avail) {
			return o.price - now, k, true
		}
	}
	return 0, 0, false
}

type lifted struct {
	p      *podInfo
	origin *candidate
}

// repackSet lifts the movable pods off set and puts them back (see repack); it keeps the result when it is cheaper.
func (s *solver) repackSet(set, zone []*candidate, movable []bool) bool {
	var pods []lifted
	for _, n := range set {
		for _, p := range append([]*podInfo(nil), n.pods...) {
			if movable[p.class.id] && !anchored(p.class) {
				pods = append(pods, lifted{p, n})
			}
		}
	}
	if len(pods) == 0 {
		return false
	}
	// receivers: the set, then the other nodes of the zone with the most room, normalised by their allocatable
	in := map[*candidate]bool{}
	for _, n := range set {
		in[n] = true
	}
	recv := append([]*candidate(nil), set...)
	recv = append(recv, s.roomiest(zone, in, repackReceivers)...)
	before := 0.0
	for _, n := range recv {
		before += n.cost
	}
	for _, l := range pods {
		s.liftPod(l.p, l.origin)
	}
	// prices as the pods go back; the options themselves are only set when the result is kept
	price := make([]float64, len(recv))
	first := make([]int, len(recv))
	for k, n := range recv {
		first[k], price[k] = cheapestFit(n)
	}
	sort.SliceStable(pods, func(i, j int) bool { return size2(pods[i].p.class.req) > size2(pods[j].p.class.req) })
	where := make([]*candidate, len(pods))
	ok := true
	for i, l := range pods {
		c := l.p.class
		best := -1
		bestRise, bestLeft, bestAt := 0.0, 0.0, 0
		for k, n := range recv {
			limit := 1e18
			if best >= 0 {
				limit = bestRise + 1e-12
			}
			rise, at, fits := riseFor(n, price[k], first[k], c.req, limit)
			if !fits {
				continue
			}
			left := roomLeft(n, c.req, n.sig.opts[n.sig.frontier()[at]].t.avail)
			better := best < 0 || rise < bestRise-1e-12 || left < bestLeft
			if better && s.sameDomains(c, l.origin, n) && s.canMove(c, l.origin, n) {
				best, bestRise, bestLeft, bestAt = k, rise, left, at
			}
		}
		if best < 0 {
			ok = false
			break
		}
		s.dropPod(l.p, recv[best])
		where[i] = recv[best]
		price[best] += bestRise
		first[best] = bestAt
	}
	after := 0.0
	for _, p := range price {
		after += p
	}
	if ok && after < before-1e-9 {
		for _, n := range recv {
			// the first option in price order that holds the pods, as placement keeps it
			switch pos, p := cheapestFit(n); {
			case len(n.pods) == 0:
				if n.cost > 0 {
					s.setOption(n, n.ptr, 0)
				}
			case pos >= 0 && (n.sig.frontier()[pos] != n.ptr || p != n.cost):
				s.setOption(n, n.sig.frontier()[pos], p)
			}
		}
		return true
	}
	for i := len(pods) - 1; i >= 0; i-- {
		if where[i] != nil {
			s.liftPod(pods[i].p, where[i])
		}
	}
	for _, l := range pods {
		s.dropPod(l.p, l.origin)
	}
	return false
}

// roomiest returns up to k nodes of zone outside skip with the most room at their current option (the sum of the
// free shares of cpu and memory), most first.
func (s *solver) roomiest(zone []*candidate, skip map[*candidate]bool, k int) []*candidate {
	type roomy struct {
		n    *candidate
		room float64
	}
	top := make([]roomy, 0, k+1)
	for _, n := range zone {
		if skip[n] || len(n.pods) == 0 {
			continue
		}
		capNow := n.capacityNow()
		r := 0.0
		for _, d := range []int{dimCPU, dimMemory} {
			if capNow[d] > 0 {
				r += float64(capNow[d]-n.used[d]) / float64(capNow[d])
			}
		}
		if r <= 0 || (len(top) == k && r <= top[k-1].room) {
			continue
		}
		at := sort.Search(len(top), func(i int) bool { return top[i].room < r })
		top = slices.Insert(top, at, roomy{n, r})
		if len(top) > k {
			top = top[:k]
		}
	}
	out := make([]*candidate, len(top))
	for i, t := range top {
		out[i] = t.n
	}
	return out
}

// roomLeft measures the room that stays free on allocatable avail when n takes req too: the sum of the squares of
// the free shares of cpu and memory. Smaller is a tighter fit; of two fits leaving the same total, the one leaving
// room in both resources rather than much of one scores lower, and that room is likelier to take another pod.
func roomLeft(n *candidate, req, avail Vec) float64 {
	var f [2]float64
	for i, d := range []int{dimCPU, dimMemory} {
		if avail[d] > 0 {
			f[i] = float64(avail[d]-n.used[d]-req[d]) / float64(avail[d])
		}
	}
	return f[0]*f[0] + f[1]*f[1]
}

// liftPod takes p off planned node from: resources and hostname topology counts (the first half of movePod).
func (s *solver) liftPod(p *podInfo, from *candidate) {
	c := p.class
	if i := slices.Index(from.pods, p); i >= 0 {
		from.pods = slices.Delete(from.pods, i, i+1)
	}
	from.used.Sub(c.req)
	for ki := range c.cur.topo {
		kg := &c.cur.topo[ki]
		if kg.key != labelHostname {
			continue
		}
		for i, g := range kg.groups {
			g.unrecordHost(from.idx, kg.isC[i], kg.isM[i] && g.eligible(from))
		}
	}
}

// dropPod puts p on planned node to (the second half of movePod).
func (s *solver) dropPod(p *podInfo, to *candidate) {
	c := p.class
	to.pods = append(to.pods, p)
	to.used.Add(c.req)
	for ki := range c.cur.topo {
		kg := &c.cur.topo[ki]
		if kg.key != labelHostname {
			continue
		}
		for i, g := range kg.groups {
			g.record("", to.idx, kg.isC[i], kg.isM[i] && g.eligible(to))
		}
	}
}
