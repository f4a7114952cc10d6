package scheduling

import (
	"math"
	"slices"
	"sort"
)

// lowerBound returns a lower bound on the hourly cost of new nodes for the pods this plan puts on new nodes: the
// optimum of a linear program (a fractional covering) solved exactly through its dual, or a simpler per-pod bound
// when that is higher.
//
// The program buys x_t >= 0 nodes of each instance type t the NodePools may launch, at t's cheapest available
// offering, with t's allocatable less DaemonSet overhead as capacity (the largest over NodePools), and minimises
// the price subject to:
//   - for every set F of instance types that is the fit set of some planned pod (the types whose capacity holds its
//     request) and every resource with demand: the capacity of the F-nodes covers the requests of all pods whose fit
//     set lies inside F (those pods can only run on F-nodes);
//   - for every required hostname pod anti-affinity term: the pods it constrains that also match it need one node
//     each, counted per fit set the same way.
//
// It relaxes: whole nodes (x is fractional), the zone and capacity type of each node (every type is priced at its
// cheapest offering in any zone, so zone spread and zonal affinity cost nothing), hostname spread, node affinity
// and taints (fit sets are by resources only), NodePool limits and minValues, and DaemonSet differences between
// NodePools. Each relaxation only lowers the optimum, so the result stays a valid bound. Any feasible dual
// solution bounds the program from below, so the bound is taken from the dual (scaled into feasibility) and holds
// even if the simplex stops early.
//
// With pattern set, the configuration program's bound (patternBound) is taken too when it is higher.
func (s *solver) lowerBound(pattern bool) float64 {
	lp, cols, counts := s.boundProgram()
	if lp == nil {
		return 0
	}
	b := math.Max(lp.solve(), s.perPodBound(cols, counts))
	if pattern {
		b = math.Max(b, s.patternBound(cols, counts, lp.fit))
	}
	return b
}

// classWorth prices each class's pods by the bound's dual solution: a pod is worth the dual value of every row that
// covers it, in proportion to its share of the row's demand, so the pods on new nodes are worth the bound in all.
// A node whose price is far above its pods' worth is where the plan loses most against the bound. Nil when there
// is no program.
func (s *solver) classWorth() []float64 {
	lp, _, _ := s.boundProgram()
	if lp == nil {
		return nil
	}
	lp.solve()
	worth := make([]float64, len(s.classes))
	for r, m := range lp.meta {
		y := lp.y[r]
		if y <= 0 {
			continue
		}
		for id, c := range s.classes {
			if lp.fit[id] == nil || !lp.fit[id].subsetOf(m.fit) {
				continue
			}
			if m.anti == nil {
				worth[id] += y * float64(c.req[m.dim]) / m.demand
			} else if containsGroup(c.antiHard, m.anti) && m.anti.matchesPod(c.namespace, c.labels) {
				worth[id] += y / m.demand
			}
		}
	}
	return worth
}

// boundProgram builds the bound's linear program for the pods planned on new nodes, or returns nil.
func (s *solver) boundProgram() (*coverLP, []boundCol, []int) {
	counts := make([]int, len(s.classes))
	antiPods := map[*group][]int{} // hostname anti-affinity group -> planned pods' class ids
	planned := 0
	for _, n := range s.nodes[len(s.existing):] {
		for _, p := range n.pods {
			c := p.class
			counts[c.id]++
			planned++
			for i, g := range c.antiHard {
				// a pod with two identical terms is in their group once (it still takes one node, not two)
				if slices.Index(c.antiHard, g) < i {
					continue
				}
				if g.kind == kindAnti && !g.soft && g.key == labelHostname && g.matchesPod(c.namespace, c.labels) {
					antiPods[g] = append(antiPods[g], c.id)
				}
			}
		}
	}
	if planned == 0 {
		return nil, nil, nil
	}
	cols := s.boundColumns()
	if len(cols) == 0 {
		return nil, nil, nil
	}
	return s.coveringProgram(cols, counts, antiPods), cols, counts
}

// boundCol is one instance type in the bound: its cheapest price and largest pod capacity over the NodePools.
type boundCol struct {
	price float64
	cap   Vec
}

func (s *solver) boundColumns() []boundCol {
	byName := map[string]int{}
	var cols []boundCol
	for _, p := range s.pools {
		// only what the NodePool may launch: its requirements' instance types at their cheapest allowed offering
		base := s.sigFor(p, p.reqs)
		for _, o := range base.opts {
			i, ok := byName[o.t.name]
			if !ok {
				byName[o.t.name] = len(cols)
				cols = append(cols, boundCol{price: o.price, cap: o.t.avail.Clone()})
				continue
			}
			cols[i].price = math.Min(cols[i].price, o.price)
			cols[i].cap.MaxInto(o.t.avail)
		}
	}
	return cols
}

// fitSet is a set of bound columns as a bitset.
type fitSet []uint64

func (f fitSet) has(i int) bool { return f[i/64]&(1<<(i%64)) != 0 }

func (f fitSet) subsetOf(o fitSet) bool {
	for i, w := range f {
		if w&^o[i] != 0 {
			return false
		}
	}
	return true
}

func (f fitSet) key() string {
	b := make([]byte, 0, len(f)*8)
	for _, w := range f {
		for k := 0; k < 8; k++ {
			b = append(b, byte(w>>(8*k)))
		}
	}
	return string(b)
}

// coveringProgram builds the rows of the bound's linear program (see lowerBound).
func (s *solver) coveringProgram(cols []boundCol, counts []int, antiPods map[*group][]int) *coverLP {
	words := (len(cols) + 63) / 64
	fit := make([]fitSet, len(s.classes))
	var sets []fitSet
	seen := map[string]bool{}
	for id, k := range counts {
		if k == 0 {
			continue
		}
		f := make(fitSet, words)
		for i, col := range cols {
			if s.classes[id].req.LessEq(col.cap) {
				f[i/64] |= 1 << (i % 64)
			}
		}
		fit[id] = f
		if key := f.key(); !seen[key] {
			seen[key] = true
			sets = append(sets, f)
		}
	}
	// largest sets first so the total demand rows come first; ties by content keep the order deterministic
	sort.SliceStable(sets, func(i, j int) bool {
		ci, cj := popcount(sets[i]), popcount(sets[j])
		if ci != cj {
			return ci > cj
		}
		return sets[i].key() < sets[j].key()
	})
	lp := &coverLP{cost: make([]float64, len(cols)), fit: fit}
	for i, c := range cols {
		lp.cost[i] = c.price
	}
	addRow := func(f fitSet, coef func(i int) float64, demand float64, meta rowMeta) {
		if demand <= 0 {
			return
		}
		row := make([]float64, len(cols))
		nonzero := false
		for i := range cols {
			if f.has(i) {
				// rows are scaled so every demand is 1, which keeps the tableau well conditioned
				row[i] = coef(i) / demand
				nonzero = nonzero || row[i] > 0
			}
		}
		if nonzero {
			lp.rows = append(lp.rows, row)
			meta.fit, meta.demand = f, demand
			lp.meta = append(lp.meta, meta)
		}
	}
	for _, f := range sets {
		demand := s.dims.Zero()
		for id, k := range counts {
			if k > 0 && fit[id].subsetOf(f) {
				demand.AddScaled(s.classes[id].req, int64(k))
			}
		}
		for d := range demand {
			addRow(f, func(i int) float64 { return float64(cols[i].cap[d]) }, float64(demand[d]), rowMeta{dim: d})
		}
	}
	groups := make([]*group, 0, len(antiPods))
	for g := range antiPods {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].id < groups[j].id })
	for _, g := range groups {
		ids := antiPods[g]
		for _, f := range sets {
			n := 0
			for _, id := range ids {
				if fit[id].subsetOf(f) {
					n++
				}
			}
			addRow(f, func(int) float64 { return 1 }, float64(n), rowMeta{anti: g})
		}
	}
	return lp
}

func popcount(f fitSet) int {
	n := 0
	for _, w := range f {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

// perPodBound: per resource dimension, every pod pays at least its request times the lowest price per unit of that
// resource among the instance types it fits on. It can beat the program when few rows bind.
func (s *solver) perPodBound(cols []boundCol, counts []int) float64 {
	best := 0.0
	for d := 0; d < s.dims.Len(); d++ {
		sum := 0.0
		for id, k := range counts {
			c := s.classes[id]
			if k == 0 || c.req[d] == 0 {
				continue
			}
			unit := math.Inf(1)
			for _, t := range cols {
				if t.cap[d] > 0 && c.req.LessEq(t.cap) {
					unit = math.Min(unit, t.price/float64(t.cap[d]))
				}
			}
			if !math.IsInf(unit, 1) {
				sum += float64(k) * float64(c.req[d]) * unit
			}
		}
		best = math.Max(best, sum)
	}
	return best
}

// coverLP is min cost·x subject to rows·x >= 1 and x >= 0, with non-negative costs and coefficients.
type coverLP struct {
	cost []float64
	rows [][]float64
	// meta says what each row covers, for podWorth
	meta []rowMeta
	// y is the dual solution solve ended at, scaled into feasibility
	y []float64
	// fit is each class's fit set (nil for classes with no pod on a new node)
	fit []fitSet
}

// rowMeta: a resource row covers dimension dim (or, with anti set, one node per pod of group anti) for the pods
// whose fit set lies inside fit; demand is the amount the row was scaled by.
type rowMeta struct {
	fit    fitSet
	dim    int
	anti   *group
	demand float64
}

// maxPivots caps the simplex; the dual solution in hand is still feasible, so stopping early only weakens the bound.
const maxPivots = 5000

// solve returns a lower bound on the program's optimum, equal to it when the simplex finishes. It runs the simplex
// on the dual, max Σy subject to Σ_r y_r·rows[r][t] <= cost[t], y >= 0, whose origin is feasible, in an exchange
// tableau with one row per column of the program and one column per row.
func (lp *coverLP) solve() float64 {
	m, n := len(lp.rows), len(lp.cost)
	if m == 0 {
		return 0
	}
	// t[i] for i < n: basic variable = t[i][m] - Σ_j t[i][j]·nonbasic_j; t[n]: objective = t[n][m] - Σ_j t[n][j]·nonbasic_j
	t := make([][]float64, n+1)
	for i := 0; i < n; i++ {
		t[i] = make([]float64, m+1)
		for j := 0; j < m; j++ {
			t[i][j] = lp.rows[j][i]
		}
		t[i][m] = lp.cost[i]
	}
	t[n] = make([]float64, m+1)
	for j := 0; j < m; j++ {
		t[n][j] = -1
	}
	// labels: 0..m-1 are the dual variables y, m..m+n-1 the slacks
	basic := make([]int, n)
	for i := range basic {
		basic[i] = m + i
	}
	nonbasic := make([]int, m)
	for j := range nonbasic {
		nonbasic[j] = j
	}
	const eps = 1e-12
	for it := 0; it < maxPivots; it++ {
		q := -1
		for j := 0; j < m; j++ {
			if t[n][j] < -1e-9 && (q < 0 || t[n][j] < t[n][q]-eps) {
				q = j
			}
		}
		if q < 0 {
			break
		}
		p := -1
		best := 0.0
		for i := 0; i < n; i++ {
			if t[i][q] <= 1e-12 {
				continue
			}
			r := t[i][m] / t[i][q]
			if p < 0 || r < best-eps || (r <= best+eps && basic[i] < basic[p]) {
				p, best = i, r
			}
		}
		if p < 0 {
			break // unbounded dual: cannot happen with positive costs and a non-zero row; keep what we have
		}
		pivot(t, p, q)
		basic[p], nonbasic[q] = nonbasic[q], basic[p]
	}
	y := make([]float64, m)
	for i, b := range basic {
		if b < m {
			y[b] = math.Max(0, t[i][m])
		}
	}
	// scale y into dual feasibility against rounding so Σy is a valid bound
	scale := 1.0
	for i := 0; i < n; i++ {
		lhs := 0.0
		for j := 0; j < m; j++ {
			lhs += y[j] * lp.rows[j][i]
		}
		if lhs > lp.cost[i] {
			if lp.cost[i] <= 0 {
				return 0
			}
			scale = math.Max(scale, lhs/lp.cost[i])
		}
	}
	sum := 0.0
	for j := range y {
		y[j] /= scale
		sum += y[j]
	}
	lp.y = y
	return sum
}

func pivot(t [][]float64, p, q int) {
	m := len(t[0]) - 1
	inv := 1 / t[p][q]
	rowP := slices.Clone(t[p])
	for j := 0; j <= m; j++ {
		if j == q {
			t[p][j] = inv
		} else {
			t[p][j] = rowP[j] * inv
		}
	}
	for i := range t {
		if i == p {
			continue
		}
		f := t[i][q]
		if f == 0 {
			continue
		}
		for j := 0; j <= m; j++ {
			if j == q {
				t[i][j] = -f * inv
			} else {
				t[i][j] -= f * rowP[j] * inv
			}
		}
	}
}
