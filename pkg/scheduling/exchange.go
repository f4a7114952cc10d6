package scheduling

import (
	"slices"
	"sort"
)

// Limits on the exchange pass (see exchange).
const (
	// exchangeSteps is the most moves and swaps made to bring one node down to a cheaper option.
	exchangeSteps = 8
	// exchangeScan is how many receiving nodes are looked at for one step.
	exchangeScan = 48
	// exchangeMaxExcess: nodes further than this above every cheaper option (the sum over resources of the excess as
	// a share of the option's allocatable) are not tried; they rarely get there and cost the most time.
	exchangeMaxExcess = 0.6
	// exchangeBudget caps the pod pairs the pass looks at, per planned node, so its time stays linear.
	exchangeBudget = 1024
)

// exchange is the second half of the improvement pass. For each planned node, those closest to a cheaper option
// first, it tries to reach that option in a few steps, each either moving one of its pods into room another node
// has at its current option or swapping one of its pods for a smaller one of another node (the other node's
// price does not change: it takes the difference in its room). Each step is the one that brings the node closest
// to the cheaper option. When the node gets there it is repriced; otherwise every step is undone. The moves obey
// the rules of shrink (same domains for every key but the hostname, requirements already admitting the pod,
// hostname spread and anti-affinity counts rechecked), so every kept exchange lowers the plan's price.
func (s *solver) exchange(planned []*candidate, movable []bool) {
	type victim struct {
		n    *candidate
		need float64
	}
	var victims []victim
	for _, a := range planned {
		if len(a.pods) == 0 || len(a.pods) > 64 || a.ptr == 0 {
			continue
		}
		o := s.closestCheaper(a, -1)
		if o < 0 {
			continue
		}
		victims = append(victims, victim{a, excess(a.used, a.sig.opts[o].t.avail)})
	}
	sort.SliceStable(victims, func(i, j int) bool { return victims[i].need < victims[j].need })
	for i, v := range victims {
		if v.need > exchangeMaxExcess {
			victims = victims[:i]
			break
		}
	}
	budget := exchangeBudget * len(planned)
	smallest := s.smallestStep()
	var roomy []*candidate
	for _, n := range planned {
		capNow := n.capacityNow()
		for d := range smallest {
			if d != dimPods && len(n.pods) > 0 && smallest[d] > 0 && n.used[d]+smallest[d] <= capNow[d] {
				roomy = append(roomy, n)
				break
			}
		}
	}
	if len(roomy) == 0 {
		return
	}
	for _, v := range victims {
		if budget <= 0 || s.ctx.Err() != nil {
			return
		}
		a := v.n
		first := s.closestCheaper(a, -1)
		for _, i := range []int{first, s.closestCheaper(a, first)} {
			if i < 0 {
				break
			}
			if s.exchangeInto(a, i, movable, roomy, smallest, &budget) {
				break
			}
		}
	}
}

// closestCheaper returns the option of a cheaper than its current price that a's pods exceed least (the cheapest
// of equals), other than the one at skip and any with the same capacity, or -1.
func (s *solver) closestCheaper(a *candidate, skip int) int {
	best, bestX := -1, 0.0
	for i := 0; i < a.ptr; i++ {
		o := a.sig.opts[i]
		if i == skip || o.price >= a.cost || (skip >= 0 && slices.Equal(a.sig.opts[skip].t.avail, o.t.avail)) || !s.withinLimits(a, o.t) {
			continue
		}
		if x := excess(a.used, o.t.avail); best < 0 || x < bestX {
			best, bestX = i, x
		}
	}
	return best
}

// excess is how far used is above avail: the sum over resources of the excess as a share of avail.
func excess(used, avail Vec) float64 {
	x := 0.0
	for d, u := range used {
		if u > avail[d] {
			if avail[d] <= 0 {
				return 1e18
			}
			x += float64(u-avail[d]) / float64(avail[d])
		}
	}
	return x
}

// excessAfter is excess(used - out + in, avail) without allocating.
func excessAfter(used, out, in, avail Vec) float64 {
	x := 0.0
	for d, u := range used {
		u -= out[d]
		if in != nil {
			u += in[d]
		}
		if u > avail[d] {
			if avail[d] <= 0 {
				return 1e18
			}
			x += float64(u-avail[d]) / float64(avail[d])
		}
	}
	return x
}

// fitsSwap reports whether b, at its current option, holds its pods with out taken off and in added.
func fitsSwap(b *candidate, in, out Vec) bool {
	capNow := b.capacityNow()
	for d, u := range b.used {
		u += in[d]
		if out != nil {
			u -= out[d]
		}
		if u > capNow[d] {
			return false
		}
	}
	return true
}

// exchangeInto tries to bring a within option target by moves and swaps; it keeps them and reprices a when that
// succeeds.
func (s *solver) exchangeInto(a *candidate, target int, movable []bool, roomy []*candidate, smallest Vec, budget *int) bool {
	avail := a.sig.opts[target].t.avail
	var done []move
	var ps []*podInfo
	undo := func() {
		for i := len(done) - 1; i >= 0; i-- {
			s.movePod(done[i].p, done[i].to, done[i].from)
		}
	}
	for step := 0; step < exchangeSteps; step++ {
		cur := excess(a.used, avail)
		if cur == 0 {
			break
		}
		type option struct {
			p, q *podInfo
			b    *candidate
			x    float64
		}
		var opts []option
		// a swap only adds to what a move leaves, so a pod whose move does not help cannot help
		ps = ps[:0]
		for _, p := range a.pods {
			if movable[p.class.id] && !anchored(p.class) && excessAfter(a.used, p.class.req, nil, avail) < cur {
				ps = append(ps, p)
			}
		}
		done0 := 0 // options that finish the job
		scanned := 0
		start := (a.idx * 7919) % len(roomy)
		for k := 0; k < len(roomy) && scanned < exchangeScan && done0 < 8 && len(ps) > 0; k++ {
			b := roomy[(start+k)%len(roomy)]
			*budget--
			if b == a || len(b.pods) == 0 || !hasRoomFor(b, a.used, avail, smallest) {
				continue
			}
			counted := false
			for _, p := range ps {
				if !s.sameDomains(p.class, a, b) {
					continue
				}
				if !counted {
					counted = true
					scanned++
				}
				*budget -= 1 + len(b.pods)
				if fitsSwap(b, p.class.req, nil) {
					if x := excessAfter(a.used, p.class.req, nil, avail); x < cur {
						opts = append(opts, option{p: p, b: b, x: x})
						if x == 0 {
							done0++
						}
					}
				}
				for _, q := range b.pods {
					if q.class == p.class || !movable[q.class.id] || anchored(q.class) || !fitsSwap(b, p.class.req, q.class.req) {
						continue
					}
					if x := excessAfter(a.used, p.class.req, q.class.req, avail); x < cur {
						opts = append(opts, option{p: p, q: q, b: b, x: x})
						if x == 0 {
							done0++
						}
					}
				}
			}
		}
		if len(opts) == 0 {
			break
		}
		sort.SliceStable(opts, func(i, j int) bool { return opts[i].x < opts[j].x })
		applied := false
		for k, o := range opts {
			if k >= 8 {
				break
			}
			if !s.canMove(o.p.class, a, o.b) {
				continue
			}
			if o.q != nil && !s.sameDomains(o.q.class, o.b, a) {
				continue
			}
			s.movePod(o.p, a, o.b)
			if o.q != nil && !s.canMove(o.q.class, o.b, a) {
				s.movePod(o.p, o.b, a)
				continue
			}
			done = append(done, move{p: o.p, from: a, to: o.b})
			if o.q != nil {
				s.movePod(o.q, o.b, a)
				done = append(done, move{p: o.q, from: o.b, to: a})
			}
			applied = true
			break
		}
		if !applied || *budget <= 0 {
			break
		}
	}
	if excess(a.used, avail) == 0 && s.reprice(a) {
		return true
	}
	undo()
	return false
}

// hasRoomFor reports whether b has room left at its current option in some resource in which used is above avail.
func hasRoomFor(b *candidate, used, avail, smallest Vec) bool {
	capNow := b.capacityNow()
	for d, u := range used {
		if u > avail[d] && b.used[d]+smallest[d] <= capNow[d] {
			return true
		}
	}
	return false
}

// smallestStep is, per resource, the smallest amount a move or swap can shift between nodes: the smallest request
// or difference between two requests of any classes, at least 1.
func (s *solver) smallestStep() Vec {
	step := s.dims.Zero()
	vals := make([]int64, 0, len(s.classes))
	for d := range step {
		vals = vals[:0]
		for _, c := range s.classes {
			if c.req[d] > 0 {
				vals = append(vals, c.req[d])
			}
		}
		if len(vals) == 0 {
			continue
		}
		slices.Sort(vals)
		step[d] = vals[0]
		for i := 1; i < len(vals); i++ {
			if g := vals[i] - vals[i-1]; g > 0 && g < step[d] {
				step[d] = g
			}
		}
	}
	return step
}
