package scheduling

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The pattern bound is the configuration linear program of the packing: a column is a pattern, one instance type
// with a whole number of pods of each item (pods alike in request, fit set and hostname anti-affinity) that fit on it
// together, and the program buys a fractional number of each pattern so that every item's pods are covered, at the
// least price. Because a pattern holds whole pods, the program charges the room a node of five pods cannot use,
// which the fit-set covering program (coveringProgram) does not; its optimum is never below that program's.
//
// It has far too many patterns to list, so they are generated (column generation): the restricted program is solved
// with the patterns found so far (the plan's own nodes to start with), and for each instance type a knapsack finds
// the pattern the restricted program's dual prices value most. Whatever the dual prices y >= 0, if no pattern of any
// type is worth more than θ times the type's price at y, then y/θ is a feasible dual solution of the whole program,
// so Σ demand·y/θ bounds it from below (Farley's bound). θ is taken from upper bounds on each knapsack (a Lagrangian
// bound, a dynamic program over cpu and memory that only ever rounds in the knapsack's favour, and the knapsack's
// linear relaxation bounded through its dual prices), so the bound holds after any number of rounds whether or not
// the knapsacks found their best pattern; more rounds and exact knapsacks only tighten it. When a round finds no
// improving pattern but θ is above one, the bound would lose all of it to the knapsacks' looseness, so the few
// types that set θ are bounded again, more tightly (refine).
//
// It relaxes what the covering program relaxes (zones, capacity types, hostname spread, node affinity and taints,
// limits, minValues, DaemonSet differences between NodePools) and keeps whole pods, fit sets, and at most one pod a
// node of every required hostname anti-affinity group among the pods it constrains that also match it.

// Limits of the pattern bound; each only decides how tight the bound gets and how long it takes, never whether it
// holds.
const (
	// maxPatternItems: above this many items the program is not built (the covering program's bound stands).
	maxPatternItems = 160
	// patternRounds caps the rounds of column generation.
	patternRounds = 60
	// patternsPerRound caps the patterns added to the restricted program a round.
	patternsPerRound = 24
	// masterPivots caps the simplex pivots of one restricted solve.
	masterPivots = 400
	// dpCells caps the table of the knapsack's dynamic program (cpu × memory cells); past it the grid coarsens.
	dpCells = 1 << 17
	// dpCoarseCells caps it while column generation runs on the coarse grid.
	dpCoarseCells = 1 << 14
	// dpPatterns caps the patterns one knapsack returns (its best, and its best with each anti-affinity item).
	dpPatterns = 8
	// dpCPUUnits caps the cpu units of cpuBound's dynamic program.
	dpCPUUnits = 4096
	// dpRefineCells caps the table of the dynamic program refine runs for the few types that set θ;
	// dpRefineRounding is the most that grid may round a request down, relative to it, for refine to run it.
	dpRefineCells    = 1 << 20
	dpRefineRounding = 0.125
	// refineSteps caps the steps of refine a round; refineSlack is how far above one θ must be for it to run.
	refineSteps = 6
	refineSlack = 1e-5
)

// dpGrid caps the dynamic program's table (cpu × memory cells): coarse while column generation looks for patterns,
// fine once the coarse grid finds none, refine for the few types refine bounds anew.
type dpGrid struct{ coarse, fine, refine int }

// patternItem is a set of pods on new nodes that are alike for the bound.
type patternItem struct {
	req    []float64 // request in the program's active dimensions
	fit    fitSet
	anti   []int // indexes of the hostname anti-affinity groups the item's pods count against
	demand float64
}

// patternProgram is the configuration program over its items and the bound's instance types.
type patternProgram struct {
	items []patternItem
	cols  []boundCol
	// active lists the instance types that no other type dominates; only they are priced
	active []int
	dims   []int       // active dimensions (some item requests them)
	cpu    int         // position of cpu in dims, or -1
	mem    int         // position of memory in dims, or -1
	cap    [][]float64 // cap[t][d]: instance type t's capacity in active dimension d
	groups int
	seeds  []seedPattern
	// grid caps the dynamic program's table in each use (tests shrink it)
	grid dpGrid
	// trace, when set, sees every round: the restricted optimum, the duals' worth, θ and the patterns found
	trace func(round int, restricted, worth, theta float64, found int)
}

// patternBound returns the pattern bound for the classes' pods on new nodes (counts), or 0 when there is no program.
func (s *solver) patternBound(cols []boundCol, counts []int, fit []fitSet) float64 {
	pp := s.patternProgramFor(cols, counts, fit)
	if pp == nil {
		return 0
	}
	return pp.solve()
}

func (s *solver) patternProgramFor(cols []boundCol, counts []int, fit []fitSet) *patternProgram {
	groupIndex := map[*group]int{}
	dimsUsed := make([]bool, s.dims.Len())
	byKey := map[string]int{}
	itemOf := map[int]int{}
	var items []patternItem
	var reqs [][]int64
	for id, k := range counts {
		if k == 0 || fit[id] == nil {
			continue
		}
		c := s.classes[id]
		var anti []int
		for _, g := range c.antiHard {
			if g.kind == kindAnti && !g.soft && g.key == labelHostname && g.matchesPod(c.namespace, c.labels) {
				i, ok := groupIndex[g]
				if !ok {
					i = len(groupIndex)
					groupIndex[g] = i
				}
				anti = append(anti, i)
			}
		}
		slices.Sort(anti)
		anti = slices.Compact(anti)
		var b strings.Builder
		for _, v := range c.req {
			b.WriteString(strconv.FormatInt(v, 36))
			b.WriteByte(',')
		}
		b.WriteString(fit[id].key())
		for _, a := range anti {
			b.WriteByte(';')
			b.WriteString(strconv.Itoa(a))
		}
		key := b.String()
		i, ok := byKey[key]
		if !ok {
			i = len(items)
			byKey[key] = i
			items = append(items, patternItem{fit: fit[id], anti: anti})
			reqs = append(reqs, c.req)
			for d, v := range c.req {
				dimsUsed[d] = dimsUsed[d] || v > 0
			}
		}
		items[i].demand += float64(k)
		itemOf[id] = i
	}
	if len(items) == 0 || len(items) > maxPatternItems {
		return nil
	}
	var dims []int
	for d, used := range dimsUsed {
		if used {
			dims = append(dims, d)
		}
	}
	for i := range items {
		items[i].req = make([]float64, len(dims))
		for j, d := range dims {
			items[i].req[j] = float64(reqs[i][d])
		}
	}
	caps := make([][]float64, len(cols))
	for t, col := range cols {
		caps[t] = make([]float64, len(dims))
		for j, d := range dims {
			caps[t][j] = float64(col.cap[d])
		}
	}
	pp := &patternProgram{items: items, cols: cols, dims: dims, cap: caps, groups: len(groupIndex),
		cpu: slices.Index(dims, dimCPU), mem: slices.Index(dims, dimMemory),
		grid: dpGrid{coarse: dpCoarseCells, fine: dpCells, refine: dpRefineCells}}
	pp.active = pp.undominated()
	// the plan's own nodes are patterns: a warm start whose restricted optimum is at most the plan's cost
	colOf := map[string]int{}
	for p := range s.pools {
		for _, o := range s.sigFor(s.pools[p], s.pools[p].reqs).opts {
			if _, ok := colOf[o.t.name]; !ok {
				colOf[o.t.name] = len(colOf)
			}
		}
	}
	for _, n := range s.nodes[len(s.existing):] {
		if len(n.pods) == 0 {
			continue
		}
		t, ok := colOf[n.sig.opts[n.ptr].t.name]
		if !ok {
			continue
		}
		a := make([]float64, len(items))
		valid := true
		for _, p := range n.pods {
			k, ok := itemOf[p.class.id]
			if !ok {
				valid = false
				break
			}
			a[k]++
		}
		if valid {
			pp.seeds = append(pp.seeds, seedPattern{a: a, t: t})
		}
	}
	return pp
}

type seedPattern struct {
	a []float64
	t int
}

// undominated lists the instance types that no other type beats: a type with at least as much of every active
// dimension at no higher price holds every pattern of the first for less, so the first can neither raise θ above
// the second's ratio nor improve the program. Of identical types the first is kept.
func (pp *patternProgram) undominated() []int {
	var out []int
	for a := range pp.cols {
		dominated := false
		for b := range pp.cols {
			if b == a || pp.cols[b].price > pp.cols[a].price {
				continue
			}
			covers, same := true, pp.cols[b].price == pp.cols[a].price
			for j := range pp.dims {
				covers = covers && pp.cap[b][j] >= pp.cap[a][j]
				same = same && pp.cap[b][j] == pp.cap[a][j]
			}
			if !covers || (same && b > a) {
				continue
			}
			// every item that fits a fits b (fit sets are by capacity, so this holds; checked, not assumed)
			fits := true
			for k := range pp.items {
				if pp.items[k].fit.has(a) && !pp.items[k].fit.has(b) {
					fits = false
					break
				}
			}
			if fits {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, a)
		}
	}
	return out
}

// solve runs column generation and returns the best Farley bound of its rounds.
func (pp *patternProgram) solve() float64 {
	m := len(pp.items)
	ms := newMaster(m, pp.items)
	// start from one single-item pattern an item: the type that holds the item's pods cheapest
	for k := range pp.items {
		best, bestT, bestN := math.Inf(1), -1, 0
		for _, t := range pp.active {
			n := pp.maxCopies(k, t)
			if n == 0 {
				continue
			}
			if per := pp.cols[t].price / float64(n); per < best {
				best, bestT, bestN = per, t, n
			}
		}
		if bestT < 0 {
			return 0
		}
		a := make([]float64, m)
		a[k] = float64(bestN)
		ms.add(a, pp.cols[bestT].price)
	}
	if !ms.start() {
		return 0
	}
	for _, sd := range pp.seeds {
		ms.add(sd.a, pp.cols[sd.t].price)
	}
	ks := newKnapsack(pp)
	bound := 0.0
	// a coarse grid finds improving patterns cheaply; once it finds none, the exact grid takes over, both to find
	// the patterns the coarse one missed and to give a tight θ for the bound
	cells := pp.grid.coarse
	for round := 0; round < patternRounds; round++ {
		ms.optimize()
		y := ms.duals()
		theta, found, tb := pp.price(ks, y, cells)
		if theta <= 0 {
			break
		}
		if cells == pp.grid.fine && len(found) == 0 && theta > 1+refineSlack {
			// no improving pattern: θ above one is the knapsacks' bounds' looseness, and the bound loses it all
			theta, found = pp.refine(ks, y, tb)
		}
		worth := 0.0
		for k, it := range pp.items {
			worth += it.demand * y[k]
		}
		// the margin covers rounding in the sums above; it only lowers the bound
		bound = math.Max(bound, worth/theta*(1-1e-9))
		if pp.trace != nil {
			pp.trace(round, ms.objective(), worth, theta, len(found))
		}
		added := 0
		for _, f := range found {
			if added == patternsPerRound {
				break
			}
			if ms.add(f.a, f.price) {
				added++
			}
		}
		if added == 0 {
			if cells == pp.grid.fine {
				break
			}
			cells = pp.grid.fine
		}
	}
	return bound
}

// maxCopies is how many pods of item k one node of type t holds alone.
func (pp *patternProgram) maxCopies(k, t int) int {
	it := &pp.items[k]
	if !it.fit.has(t) {
		return 0
	}
	n := it.demand
	for j, r := range it.req {
		if r > 0 {
			n = math.Min(n, math.Floor(pp.cap[t][j]/r))
		}
	}
	if len(it.anti) > 0 {
		n = math.Min(n, 1)
	}
	return int(math.Max(n, 0))
}

// foundPattern is a pattern whose worth at the current dual prices exceeds its price.
type foundPattern struct {
	a     []float64
	price float64
	gain  float64 // worth / price
}

// typeBounds holds each instance type's bound on its best pattern's worth at the dual prices relative to its
// price (0 where nothing of worth fits), and how far the type was searched: 0 for the Lagrangian bound at last
// round's multipliers only, 1 once examined as far as it could raise θ, 2 once examined fully, 3 once refined.
type typeBounds struct {
	ratio []float64
	level []int8
}

// price returns θ, an upper bound over every instance type on the best pattern's worth at y relative to the type's
// price, the improving patterns found, best first, and each type's bound. Types are taken in the order of their
// Lagrangian bound at last round's multipliers; once that is at most θ for the rest, they cannot raise θ and are
// not searched.
func (pp *patternProgram) price(ks *knapsack, y []float64, cells int) (float64, []foundPattern, typeBounds) {
	tb := typeBounds{ratio: make([]float64, len(pp.cols)), level: make([]int8, len(pp.cols))}
	cands := make([]int, 0, len(pp.active))
	for _, t := range pp.active {
		ub := ks.quickBound(t, y)
		if ub <= 0 {
			continue
		}
		if pp.cols[t].price <= 0 {
			return 0, nil, tb // a free instance type: no positive bound
		}
		tb.ratio[t] = ub / pp.cols[t].price
		cands = append(cands, t)
	}
	sort.SliceStable(cands, func(i, j int) bool { return tb.ratio[cands[i]] > tb.ratio[cands[j]] })
	theta := 0.0
	var found []foundPattern
	for _, t := range cands {
		if tb.ratio[t] <= theta {
			break // no later type can raise θ: its bound is lower
		}
		found = pp.examine(ks, t, y, cells, theta, tb, found)
		theta = math.Max(theta, tb.ratio[t])
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].gain > found[j].gain })
	return theta, found, tb
}

// examine bounds type t's ratio only as far as it can raise θ above theta: a tighter Lagrangian bound first, the
// dynamic program when that is not enough, and on the fine grid, when the dynamic program is not exact, cpuBound
// and the linear relaxation. It appends the improving patterns it finds to found.
func (pp *patternProgram) examine(ks *knapsack, t int, y []float64, cells int, theta float64, tb typeBounds, found []foundPattern) []foundPattern {
	price := pp.cols[t].price
	ratio := math.Min(tb.ratio[t], ks.searchLambda(t, y)/price)
	if ratio > theta {
		ub, patterns, exact := ks.dpBound(t, y, cells)
		ratio = math.Min(ratio, ub/price)
		if !exact && cells == pp.grid.fine && ratio > theta {
			// a coarsened grid loosens memory most: bound it with memory priced in instead, cpu kept exact (only
			// on the fine grid: the coarse rounds look for patterns, the fine ones make θ tight)
			ratio = math.Min(ratio, ks.cpuBound(t, y)/price)
		}
		if !exact && cells == pp.grid.fine && ratio > theta {
			// a coarsened grid may find no pattern at all, or lose the best when its pods must be trimmed to
			// fit: the linear relaxation, exact in every dimension, gives a pattern of its own (and a bound)
			ub, a := ks.lpBound(t, y)
			ratio = math.Min(ratio, ub/price)
			if a != nil {
				patterns = append(patterns, a)
			}
		}
		found = appendImproving(found, patterns, y, price)
	}
	tb.ratio[t], tb.level[t] = ratio, 1
	return found
}

// refine lowers θ when the knapsacks' bounds, not the patterns, keep it above one. It takes the type whose bound
// sets θ while that bound is above one: a type price examined only as far as it could raise θ then, or not at all,
// is examined fully (every bound while its ratio is above one); one examined fully is bounded anew with the dynamic
// program on a finer grid (grid.refine) unless even that grid rounds some request down by more than
// dpRefineRounding of it (on the largest types, where cpuBound does better); one refined already ends it, as do
// refineSteps steps. It returns θ over the bounds so lowered (tb is updated) and the improving patterns found.
func (pp *patternProgram) refine(ks *knapsack, y []float64, tb typeBounds) (float64, []foundPattern) {
	var found []foundPattern
	for range refineSteps {
		t := 0
		for u, r := range tb.ratio {
			if r > tb.ratio[t] {
				t = u
			}
		}
		if tb.ratio[t] <= 1+refineSlack || tb.level[t] == 3 {
			break
		}
		if tb.level[t] < 2 {
			found = pp.examine(ks, t, y, pp.grid.fine, 1, tb, found)
			tb.level[t] = 2
			continue
		}
		tb.level[t] = 3
		if ks.dpRounding(t, y, pp.grid.refine) > dpRefineRounding {
			continue // even the finer grid rounds some request away: its bound would be no tighter
		}
		price := pp.cols[t].price
		ub, patterns, _ := ks.dpBound(t, y, pp.grid.refine)
		tb.ratio[t] = math.Min(tb.ratio[t], ub/price)
		found = appendImproving(found, patterns, y, price)
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].gain > found[j].gain })
	return slices.Max(tb.ratio), found
}

// appendImproving appends to found the patterns of a type at price that are worth more than it at y.
func appendImproving(found []foundPattern, patterns [][]float64, y []float64, price float64) []foundPattern {
	for _, a := range patterns {
		if worth := patternWorth(a, y); worth > price*(1+1e-9) {
			found = append(found, foundPattern{a: a, price: price, gain: worth / price})
		}
	}
	return found
}

func patternWorth(a, y []float64) float64 {
	w := 0.0
	for k, n := range a {
		w += n * y[k]
	}
	return w
}

// knapsack bounds, for one instance type and dual prices y, the worth Σ y·count of the best pattern. Items in a
// hostname anti-affinity group go at most one a group (an item in several groups is held to its first group here,
// which only loosens the bound).
type knapsack struct {
	pp *patternProgram
	// lambdas[t] is the Lagrange multiplier of type t's capacity found last; a round starts from it
	lambdas [][]float64
	// scratch, reused across calls
	order  []int
	limit  []float64
	bucket []int // item -> its group, or -1
	gmax   []float64
	garg   []int
	grid   []float64
}

func newKnapsack(pp *patternProgram) *knapsack {
	m, nd := len(pp.items), len(pp.dims)
	ks := &knapsack{pp: pp, lambdas: make([][]float64, len(pp.cols)), limit: make([]float64, m), bucket: make([]int, m),
		gmax: make([]float64, pp.groups), garg: make([]int, pp.groups)}
	for t := range ks.lambdas {
		ks.lambdas[t] = make([]float64, nd)
	}
	for k, it := range pp.items {
		ks.bucket[k] = -1
		if len(it.anti) > 0 {
			ks.bucket[k] = it.anti[0]
		}
	}
	return ks
}

// itemsFor lists the items that can go on type t with positive worth, and each one's copy limit.
func (ks *knapsack) itemsFor(t int, y []float64) []int {
	ks.order = ks.order[:0]
	for k := range ks.pp.items {
		if y[k] <= 0 {
			continue
		}
		n := ks.pp.maxCopies(k, t)
		if n == 0 {
			continue
		}
		ks.limit[k] = float64(n)
		ks.order = append(ks.order, k)
	}
	return ks.order
}

// reduced is item k's worth less its capacity at the prices lambda.
func (ks *knapsack) reduced(k int, y, lambda []float64) float64 {
	p := y[k]
	for j, r := range ks.pp.items[k].req {
		p -= lambda[j] * r
	}
	return p
}

// lagrange returns Σ_d λ_d·cap_d + Σ_free limit_k·max(0, y_k - λ·req_k) + Σ_groups max(0, max_k∈g y_k - λ·req_k),
// which bounds the knapsack from above for any λ >= 0 (the Lagrangian of the capacity constraints). With slope set,
// it returns instead the derivative in λ_slope from the right.
func (ks *knapsack) lagrange(t int, y, lambda []float64, slope int) float64 {
	v := 0.0
	if slope >= 0 {
		v = ks.pp.cap[t][slope]
	} else {
		for j, l := range lambda {
			v += l * ks.pp.cap[t][j]
		}
	}
	for g := range ks.gmax {
		ks.gmax[g], ks.garg[g] = 0, -1
	}
	for _, k := range ks.order {
		p := ks.reduced(k, y, lambda)
		if p <= 0 {
			continue
		}
		if g := ks.bucket[k]; g >= 0 {
			if p > ks.gmax[g] {
				ks.gmax[g], ks.garg[g] = p, k
			}
			continue
		}
		if slope >= 0 {
			v -= ks.limit[k] * ks.pp.items[k].req[slope]
		} else {
			v += ks.limit[k] * p
		}
	}
	for g, k := range ks.garg {
		switch {
		case k < 0:
		case slope >= 0:
			v -= ks.pp.items[k].req[slope]
		default:
			v += ks.gmax[g]
		}
	}
	return v
}

// searchLambda lowers the Lagrangian bound of type t by line searches (bisection on the slope's sign), one
// dimension at a time, keeps the multipliers for the next round, and returns the bound.
func (ks *knapsack) searchLambda(t int, y []float64) float64 {
	if len(ks.itemsFor(t, y)) == 0 {
		return 0
	}
	lambda := ks.lambdas[t]
	for sweep := 0; sweep < 3; sweep++ {
		for j := range lambda {
			hi := 0.0
			for _, k := range ks.order {
				if r := ks.pp.items[k].req[j]; r > 0 {
					hi = math.Max(hi, y[k]/r)
				}
			}
			lo := 0.0
			lambda[j] = 0
			if ks.lagrange(t, y, lambda, j) >= 0 {
				continue
			}
			for i := 0; i < 40 && hi-lo > 1e-9*hi; i++ {
				mid := (lo + hi) / 2
				lambda[j] = mid
				if ks.lagrange(t, y, lambda, j) >= 0 {
					hi = mid
				} else {
					lo = mid
				}
			}
			lambda[j] = hi
		}
	}
	return ks.lagrange(t, y, lambda, -1)
}

// quickBound is the Lagrangian bound of type t at its last multipliers (0 when nothing of worth fits).
func (ks *knapsack) quickBound(t int, y []float64) float64 {
	if len(ks.itemsFor(t, y)) == 0 {
		return 0
	}
	return ks.lagrange(t, y, ks.lambdas[t], -1)
}

// dpBound bounds the knapsack of type t from above with a dynamic program over cpu and memory. Requests are counted
// in grid units rounded down and the capacity in whole units, so whatever fits the type fits the grid; the other
// dimensions, the copy limits and every anti-affinity group but the first are dropped, so more patterns fit and the
// program's best is still an upper bound. The grid's units are the greatest common divisors of the requests, so
// cpu and memory are exact, unless the table would pass dpCells: then the unit of the longer side doubles until it
// fits (exact is false then). It also returns its best patterns traced back, trimmed until they fit every dimension
// and limit. The bound is +Inf when the program cannot bound the knapsack (no cpu or memory dimension, or an item
// that would take no room on the grid).
// dpItem is an item's request in grid units.
type dpItem struct {
	k      int
	rc, rm int
}

func (ks *knapsack) dpBound(t int, y []float64, cells int) (ub float64, patterns [][]float64, exact bool) {
	pp := ks.pp
	if pp.cpu < 0 || pp.mem < 0 || len(ks.itemsFor(t, y)) == 0 {
		return math.Inf(1), nil, false // no bound
	}
	uc, um, nc, nm, exact := ks.dpGridFor(t, cells)
	var free, anti []dpItem
	for _, k := range ks.order {
		item := &pp.items[k]
		rc, rm := int(item.req[pp.cpu]/uc), int(item.req[pp.mem]/um)
		if rc == 0 && rm == 0 {
			return math.Inf(1), nil, false // free on the grid: no bound
		}
		if rc > nc || rm > nm {
			continue
		}
		if ks.bucket[k] == 0 {
			anti = append(anti, dpItem{k, rc, rm})
		} else {
			free = append(free, dpItem{k, rc, rm})
		}
	}
	w := nm + 1
	if cap(ks.grid) < (nc+1)*w {
		ks.grid = make([]float64, (nc+1)*w)
	}
	f := ks.grid[:(nc+1)*w]
	// f[c·w+m]: the most worth that fits in c cpu and m memory units; items one by one, cells in ascending order, so
	// each item may be taken any number of times
	clear(f)
	for _, x := range free {
		v := y[x.k]
		for c := x.rc; c <= nc; c++ {
			row, src := f[c*w:(c+1)*w], f[(c-x.rc)*w:(c-x.rc+1)*w]
			for m := x.rm; m <= nm; m++ {
				if cand := src[m-x.rm] + v; cand > row[m] {
					row[m] = cand
				}
			}
		}
	}
	ub = f[nc*w+nm]
	for _, x := range anti {
		ub = math.Max(ub, f[(nc-x.rc)*w+nm-x.rm]+y[x.k])
	}
	// patterns: the best without an anti-affinity pod, and the best with each anti-affinity item, best first
	type start struct {
		val float64
		at  int // index into anti, or -1
	}
	starts := []start{{f[nc*w+nm], -1}}
	for i, x := range anti {
		starts = append(starts, start{f[(nc-x.rc)*w+nm-x.rm] + y[x.k], i})
	}
	sort.SliceStable(starts, func(i, j int) bool { return starts[i].val > starts[j].val })
	for _, st := range starts[:min(len(starts), dpPatterns)] {
		a := make([]float64, len(pp.items))
		c, m := nc, nm
		if st.at >= 0 {
			x := anti[st.at]
			a[x.k]++
			c, m = c-x.rc, m-x.rm
		}
		if ks.trace(f, w, free, c, m, y, a) && ks.trim(t, a, y) {
			patterns = append(patterns, a)
		}
	}
	return ub, patterns, exact
}

// dpGridFor returns dpBound's grid for type t over the items of ks.order: the units of cpu and memory, the
// capacity in units, and whether the grid is exact (the units divide every request).
func (ks *knapsack) dpGridFor(t, cells int) (uc, um float64, nc, nm int, exact bool) {
	pp := ks.pp
	capC, capM := pp.cap[t][pp.cpu], pp.cap[t][pp.mem]
	gc, gm := int64(0), int64(0)
	for _, k := range ks.order {
		gc = gcd(gc, int64(pp.items[k].req[pp.cpu]))
		gm = gcd(gm, int64(pp.items[k].req[pp.mem]))
	}
	uc, um = float64(max(gc, 1)), float64(max(gm, 1))
	nc, nm = int(capC/uc), int(capM/um)
	exact = true
	for (nc+1)*(nm+1) > cells {
		exact = false
		if nm >= nc {
			um *= 2
			nm = int(capM / um)
		} else {
			uc *= 2
			nc = int(capC / uc)
		}
	}
	return uc, um, nc, nm, exact
}

// dpRounding is the most that dpBound's grid for type t at y rounds an item's cpu or memory request down, relative
// to the request (1 when there is no grid).
func (ks *knapsack) dpRounding(t int, y []float64, cells int) float64 {
	pp := ks.pp
	if pp.cpu < 0 || pp.mem < 0 || len(ks.itemsFor(t, y)) == 0 {
		return 1
	}
	uc, um, _, _, _ := ks.dpGridFor(t, cells)
	worst := 0.0
	for _, k := range ks.order {
		for _, d := range [][2]float64{{pp.items[k].req[pp.cpu], uc}, {pp.items[k].req[pp.mem], um}} {
			if r, u := d[0], d[1]; r > 0 {
				worst = math.Max(worst, (r-math.Floor(r/u)*u)/r)
			}
		}
	}
	return worst
}

// trace follows the table f back from cell (c, m), adding the pods it took to a; false if it loses the way.
func (ks *knapsack) trace(f []float64, w int, free []dpItem, c, m int, y, a []float64) bool {
	for f[c*w+m] > 0 {
		v := f[c*w+m]
		switch {
		case c > 0 && f[(c-1)*w+m] == v:
			c--
		case m > 0 && f[c*w+m-1] == v:
			m--
		default:
			moved := false
			for _, x := range free {
				if x.rc <= c && x.rm <= m && f[(c-x.rc)*w+m-x.rm]+y[x.k] == v {
					a[x.k]++
					c, m = c-x.rc, m-x.rm
					moved = true
					break
				}
			}
			if !moved {
				return false
			}
		}
	}
	return true
}

// trim makes pattern a a column: within copy limits, and, since a coarse grid or a dropped dimension may break it,
// fitting every dimension and anti-affinity group, taking pods off least worth first. False if nothing is left.
func (ks *knapsack) trim(t int, a, y []float64) bool {
	for k, n := range a {
		a[k] = math.Min(n, ks.limit[k])
	}
	for !ks.feasible(t, a) {
		worst := -1
		for k, n := range a {
			if n > 0 && (worst < 0 || y[k] < y[worst]) {
				worst = k
			}
		}
		if worst < 0 {
			return false
		}
		a[worst]--
	}
	return slices.ContainsFunc(a, func(n float64) bool { return n > 0 })
}

// cpuBound bounds the knapsack of type t from above with memory priced into the worth instead of held to the
// capacity (Lagrangian): for any price λ >= 0, λ·memory plus the best worth at y - λ·request that fits the cpu
// bounds it. The inner knapsack is a dynamic program over cpu alone (exact in cpu, or rounded down as dpBound does
// past dpCPUUnits); λ is searched by golden section, since the bound is convex in λ. +Inf when there is no bound.
func (ks *knapsack) cpuBound(t int, y []float64) float64 {
	pp := ks.pp
	if pp.cpu < 0 || pp.mem < 0 || len(ks.itemsFor(t, y)) == 0 {
		return math.Inf(1)
	}
	capC, capM := pp.cap[t][pp.cpu], pp.cap[t][pp.mem]
	gc, hi := int64(0), 0.0
	for _, k := range ks.order {
		gc = gcd(gc, int64(pp.items[k].req[pp.cpu]))
		if r := pp.items[k].req[pp.mem]; r > 0 {
			hi = math.Max(hi, y[k]/r)
		}
	}
	uc := float64(max(gc, 1))
	nc := int(capC / uc)
	for nc > dpCPUUnits {
		uc *= 2
		nc = int(capC / uc)
	}
	if cap(ks.grid) < nc+1 {
		ks.grid = make([]float64, nc+1)
	}
	g := ks.grid[:nc+1]
	at := func(lambda float64) float64 {
		clear(g)
		for _, k := range ks.order {
			item := &pp.items[k]
			v := y[k] - lambda*item.req[pp.mem]
			rc := int(item.req[pp.cpu] / uc)
			if v <= 0 || ks.bucket[k] == 0 || rc > nc {
				continue
			}
			if rc == 0 {
				return math.Inf(1)
			}
			for c := rc; c <= nc; c++ {
				g[c] = math.Max(g[c], g[c-rc]+v)
			}
		}
		best := g[nc]
		for _, k := range ks.order {
			item := &pp.items[k]
			v := y[k] - lambda*item.req[pp.mem]
			rc := int(item.req[pp.cpu] / uc)
			if v <= 0 || ks.bucket[k] != 0 || rc > nc {
				continue
			}
			best = math.Max(best, g[nc-rc]+v)
		}
		return lambda*capM + best
	}
	lo, best := 0.0, math.Inf(1)
	const phi = 0.6180339887498949
	a, b := lo+(1-phi)*(hi-lo), lo+phi*(hi-lo)
	fa, fb := at(a), at(b)
	for i := 0; i < 30 && hi-lo > 1e-6*hi; i++ {
		if fa <= fb {
			hi, b, fb = b, a, fa
			a = lo + (1-phi)*(hi-lo)
			fa = at(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + phi*(hi-lo)
			fb = at(b)
		}
		best = math.Min(best, math.Min(fa, fb))
	}
	return math.Min(best, math.Min(at(0), at(hi)))
}

// feasible reports whether pattern a fits type t in every dimension and holds one pod at most of every group.
func (ks *knapsack) feasible(t int, a []float64) bool {
	pp := ks.pp
	for j := range pp.dims {
		u := 0.0
		for k, n := range a {
			u += n * pp.items[k].req[j]
		}
		if u > pp.cap[t][j] {
			return false
		}
	}
	for g := 0; g < pp.groups; g++ {
		n := 0.0
		for k, c := range a {
			if slices.Contains(pp.items[k].anti, g) {
				n += c
			}
		}
		if n > 1 {
			return false
		}
	}
	return true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// master is the restricted configuration program min Σ price·x subject to Σ a·x >= demand, x >= 0, solved by a
// revised simplex with an explicit basis inverse. Columns are patterns; the surplus columns are implicit.
type master struct {
	m      int
	demand []float64
	cols   [][]float64
	nz     [][]int32 // nz[j]: the rows where pattern j is not zero
	cost   []float64
	seen   map[string]bool
	key    []byte // scratch for add
	// basis: basic[i] is a pattern index, or -1-k for the surplus of row k
	basic []int
	binv  [][]float64
	x     []float64
}

func newMaster(m int, items []patternItem) *master {
	d := make([]float64, m)
	for k, it := range items {
		d[k] = it.demand
	}
	return &master{m: m, demand: d, seen: map[string]bool{}}
}

// add appends a pattern unless it is already there.
func (ms *master) add(a []float64, price float64) bool {
	ms.key = ms.key[:0]
	for _, v := range a {
		ms.key = strconv.AppendFloat(ms.key, v, 'g', -1, 64)
		ms.key = append(ms.key, ',')
	}
	if ms.seen[string(ms.key)] {
		return false
	}
	ms.seen[string(ms.key)] = true
	var nz []int32
	for k, v := range a {
		if v != 0 {
			nz = append(nz, int32(k))
		}
	}
	ms.cols = append(ms.cols, slices.Clone(a))
	ms.nz = append(ms.nz, nz)
	ms.cost = append(ms.cost, price)
	return true
}

// start makes the first m columns (one single-item pattern a row) the basis.
func (ms *master) start() bool {
	if len(ms.cols) < ms.m {
		return false
	}
	ms.basic = make([]int, ms.m)
	ms.binv = make([][]float64, ms.m)
	ms.x = make([]float64, ms.m)
	for i := 0; i < ms.m; i++ {
		a := ms.cols[i][i]
		if a <= 0 {
			return false
		}
		ms.basic[i] = i
		ms.binv[i] = make([]float64, ms.m)
		ms.binv[i][i] = 1 / a
		ms.x[i] = ms.demand[i] / a
	}
	return true
}

// column returns column j of the program: a pattern, or -e_k for the surplus of row k (j = -1-k).
func (ms *master) column(j int, out []float64) {
	if j >= 0 {
		copy(out, ms.cols[j])
		return
	}
	for i := range out {
		out[i] = 0
	}
	out[-1-j] = -1
}

func (ms *master) costOf(j int) float64 {
	if j >= 0 {
		return ms.cost[j]
	}
	return 0
}

// prices sets y = c_B·B⁻¹, the dual prices of the current basis.
func (ms *master) prices(y []float64) {
	clear(y)
	for i, b := range ms.basic {
		c := ms.costOf(b)
		if c == 0 {
			continue
		}
		for k, v := range ms.binv[i] {
			y[k] += c * v
		}
	}
}

// duals returns the dual prices clamped at zero (the bound needs y >= 0; clamping keeps it valid).
func (ms *master) duals() []float64 {
	y := make([]float64, ms.m)
	ms.prices(y)
	for k := range y {
		y[k] = math.Max(0, y[k])
	}
	return y
}

// optimize runs primal simplex pivots over the columns in hand (Dantzig's rule, ties to the lowest index) until
// none improves or the pivot cap is reached.
func (ms *master) optimize() {
	u := make([]float64, ms.m)
	col := make([]float64, ms.m)
	// inBasis[j] for pattern j, inBasis[len(cols)+k] for the surplus of row k
	inBasis := make([]bool, len(ms.cols)+ms.m)
	slot := func(j int) int {
		if j >= 0 {
			return j
		}
		return len(ms.cols) - 1 - j
	}
	for _, b := range ms.basic {
		inBasis[slot(b)] = true
	}
	y := make([]float64, ms.m)
	for it := 0; it < masterPivots; it++ {
		ms.prices(y)
		enter, best := 0, -1e-9
		found := false
		for j, a := range ms.cols {
			if inBasis[j] {
				continue
			}
			d := ms.cost[j]
			for _, k := range ms.nz[j] {
				d -= y[k] * a[k]
			}
			if d < best {
				enter, best, found = j, d, true
			}
		}
		for k := 0; k < ms.m; k++ {
			j := -1 - k
			if inBasis[slot(j)] {
				continue
			}
			if d := y[k]; d < best { // reduced cost of a surplus: 0 - y·(-e_k)
				enter, best, found = j, d, true
			}
		}
		if !found {
			return
		}
		ms.column(enter, col)
		for i := range u {
			s := 0.0
			for k, v := range col {
				if v != 0 {
					s += ms.binv[i][k] * v
				}
			}
			u[i] = s
		}
		leave, ratio := -1, math.Inf(1)
		for i, ui := range u {
			if ui <= 1e-12 {
				continue
			}
			if r := ms.x[i] / ui; r < ratio-1e-12 {
				leave, ratio = i, r
			}
		}
		if leave < 0 {
			return // unbounded: impossible with non-negative costs; stop with what we have
		}
		pu := u[leave]
		for k := range ms.binv[leave] {
			ms.binv[leave][k] /= pu
		}
		ms.x[leave] = ratio
		for i := range ms.binv {
			if i == leave || u[i] == 0 {
				continue
			}
			f := u[i]
			for k, v := range ms.binv[leave] {
				ms.binv[i][k] -= f * v
			}
			ms.x[i] = math.Max(0, ms.x[i]-f*ratio)
		}
		inBasis[slot(ms.basic[leave])] = false
		ms.basic[leave] = enter
		inBasis[slot(enter)] = true
	}
}

func (ms *master) objective() float64 {
	v := 0.0
	for i, b := range ms.basic {
		v += ms.costOf(b) * ms.x[i]
	}
	return v
}
