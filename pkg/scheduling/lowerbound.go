package scheduling

import "math"

// lowerBound returns a lower bound on the hourly cost of new nodes for the pods this plan puts on new nodes.
// It is the best of three relaxations, each a valid bound on its own:
//   - for every pair of resource dimensions, the exact optimum of the linear program "buy fractional amounts of
//     instance types (each at its cheapest available offering, capacity net of DaemonSet overhead) to cover the
//     pods' total requests" — with two constraints an optimal basis uses at most two types, so enumerating single
//     types and pairs solves it exactly;
//   - per resource dimension, every pod pays at least its request times the lowest price per unit of that
//     resource among the instance types it fits on (a node's pods never request more than it offers), which
//     keeps the bound honest for pods only large types can hold;
//   - pods with required hostname anti-affinity against each other need one node each.
func (s *solver) lowerBound() float64 {
	total := s.dims.Zero()
	planned := 0
	antiNodes := map[*group]int{}
	for _, n := range s.nodes[len(s.existing):] {
		for _, p := range n.pods {
			total.Add(p.class.req)
			planned++
			for _, g := range p.class.cur.groups {
				if g.kind == kindAnti && g.key == labelHostname && g.matchesPod(p.class.namespace, p.class.labels) {
					antiNodes[g]++
				}
			}
		}
	}
	if planned == 0 {
		return 0
	}
	type col struct {
		price float64
		cap   Vec
	}
	byName := map[string]*col{}
	var names []string
	for _, p := range s.pools {
		// only what the NodePool may launch: its requirements' instance types at their cheapest allowed offering
		base := s.sigFor(p, p.reqs)
		for _, o := range base.opts {
			t := o.t
			c, ok := byName[t.name]
			if !ok {
				byName[t.name] = &col{price: o.price, cap: t.avail.Clone()}
				names = append(names, t.name)
				continue
			}
			c.price = math.Min(c.price, o.price)
			c.cap.MaxInto(t.avail)
		}
	}
	if len(names) == 0 {
		return 0
	}
	cols := make([]*col, 0, len(names))
	for _, n := range names {
		cols = append(cols, byName[n])
	}
	var dims []int
	for i, x := range total {
		if x > 0 {
			dims = append(dims, i)
		}
	}
	best := 0.0
	for a := 0; a < len(dims); a++ {
		for b := a; b < len(dims); b++ {
			i, j := dims[a], dims[b]
			d1, d2 := float64(total[i]), float64(total[j])
			lp := math.Inf(1)
			for _, t := range cols {
				c1, c2 := float64(t.cap[i]), float64(t.cap[j])
				if c1 <= 0 || c2 <= 0 {
					continue
				}
				lp = math.Min(lp, t.price*math.Max(d1/c1, d2/c2))
			}
			if i != j {
				for x := 0; x < len(cols); x++ {
					t := cols[x]
					for y := x + 1; y < len(cols); y++ {
						u := cols[y]
						a1, a2 := float64(t.cap[i]), float64(t.cap[j])
						b1, b2 := float64(u.cap[i]), float64(u.cap[j])
						det := a1*b2 - b1*a2
						if det == 0 {
							continue
						}
						xt := (d1*b2 - b1*d2) / det
						xu := (a1*d2 - d1*a2) / det
						if xt < 0 || xu < 0 {
							continue
						}
						lp = math.Min(lp, xt*t.price+xu*u.price)
					}
				}
			}
			if !math.IsInf(lp, 1) {
				best = math.Max(best, lp)
			}
		}
	}
	// per-pod, per-dimension unit prices over the types each class fits
	perClass := make([]int, len(s.classes))
	for _, n := range s.nodes[len(s.existing):] {
		for _, p := range n.pods {
			perClass[p.class.id]++
		}
	}
	for _, i := range dims {
		sum := 0.0
		for id, k := range perClass {
			c := s.classes[id]
			if k == 0 {
				continue
			}
			if c.req[i] == 0 {
				continue
			}
			unit := math.Inf(1)
			for _, t := range cols {
				if t.cap[i] > 0 && c.req.LessEq(t.cap) {
					unit = math.Min(unit, t.price/float64(t.cap[i]))
				}
			}
			if !math.IsInf(unit, 1) {
				sum += float64(k) * float64(c.req[i]) * unit
			}
		}
		best = math.Max(best, sum)
	}
	cheapest := math.Inf(1)
	for _, t := range cols {
		cheapest = math.Min(cheapest, t.price)
	}
	for _, k := range antiNodes {
		best = math.Max(best, float64(k)*cheapest)
	}
	return best
}
