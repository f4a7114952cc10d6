package scheduling

import (
	"math"
	"slices"
)

// lpPivots caps the simplex pivots of one knapsack's linear relaxation; stopping early only loosens its bound.
const lpPivots = 200

// knapsackLP is one instance type's knapsack at dual prices y as a linear program, max c·x subject to A·x <= b and
// 0 <= x <= limit, over the items that can go on the type with positive worth: a row per active dimension (scaled
// to a capacity of one) and one per hostname anti-affinity group holding two of those items or more, every group of
// an item counted (the dynamic program keeps only the first).
//
// Its bound is taken from the rows' dual prices rather than the simplex's objective, so that it holds whatever the
// simplex's rounding or pivot cap: for any prices λ >= 0, λ·b + Σ_k limit_k·max(0, c_k - λ·A_k) is at least the worth
// of every pattern (weak duality). Its solution, rounded down and filled greedily, is a pattern: the dynamic program
// finds none when its grid is too coarse, and loses worth when the pods it packs must be trimmed to fit.
type knapsackLP struct {
	items []int       // the knapsack item of each variable
	c     []float64   // worth of each variable
	lim   []float64   // copy limit of each variable
	raw   [][]float64 // raw[i][j]: variable j's request in capacity row i, unscaled, to check fits exactly
	rawB  []float64   // capacity of each capacity row
	a     [][]float64 // the rows: capacity rows scaled by their capacity, then group rows
	// the simplex's state
	tab   [][]float64 // B⁻¹[A I]
	d     []float64   // reduced costs
	beta  []float64   // values of the basic variables
	basis []int
	upper []bool // a nonbasic variable at its upper bound
}

func (ks *knapsack) newKnapsackLP(t int, y []float64) *knapsackLP {
	pp := ks.pp
	order := ks.itemsFor(t, y)
	if len(order) == 0 {
		return nil
	}
	n := len(order)
	lp := &knapsackLP{items: slices.Clone(order), c: make([]float64, n), lim: make([]float64, n)}
	for j, k := range lp.items {
		lp.c[j], lp.lim[j] = y[k], ks.limit[k]
	}
	for d := range pp.dims {
		raw, scaled := make([]float64, n), make([]float64, n)
		used := false
		for j, k := range lp.items {
			raw[j] = pp.items[k].req[d]
			scaled[j] = raw[j] / pp.cap[t][d]
			used = used || raw[j] > 0
		}
		if used {
			lp.raw, lp.rawB, lp.a = append(lp.raw, raw), append(lp.rawB, pp.cap[t][d]), append(lp.a, scaled)
		}
	}
	for g := 0; g < pp.groups; g++ {
		row := make([]float64, n)
		members := 0
		for j, k := range lp.items {
			if slices.Contains(pp.items[k].anti, g) {
				row[j] = 1
				members++
			}
		}
		if members > 1 { // an item alone in its group is held to one copy by its limit
			lp.a = append(lp.a, row)
		}
	}
	m := len(lp.a)
	lp.tab = make([][]float64, m)
	for i, row := range lp.a {
		lp.tab[i] = make([]float64, n+m)
		copy(lp.tab[i], row)
		lp.tab[i][n+i] = 1
	}
	lp.d = make([]float64, n+m)
	copy(lp.d, lp.c)
	lp.beta = make([]float64, m)
	lp.basis = make([]int, m)
	for i := range lp.basis {
		lp.basis[i] = n + i
		lp.beta[i] = 1
	}
	lp.upper = make([]bool, n+m)
	return lp
}

// bound returns the weak-duality bound at the current basis' dual prices.
func (lp *knapsackLP) bound() float64 {
	n := len(lp.items)
	ub := 0.0
	lam := make([]float64, len(lp.a))
	for i := range lam {
		lam[i] = math.Max(0, -lp.d[n+i]) // a slack's reduced cost is minus its row's dual price
		ub += lam[i]                     // every row's right-hand side is one
	}
	for j, c := range lp.c {
		r := c
		for i, l := range lam {
			r -= l * lp.a[i][j]
		}
		ub += lp.lim[j] * math.Max(0, r)
	}
	return ub
}

// upperOf is variable j's upper bound (a slack has none).
func (lp *knapsackLP) upperOf(j int) float64 {
	if j < len(lp.items) {
		return lp.lim[j]
	}
	return math.Inf(1)
}

// solve runs the bounded-variable primal simplex from the slack basis (feasible: every right-hand side is one):
// the largest reduced cost enters, then, past half the pivot cap, the lowest index that improves, so that a
// degenerate cycle ends.
func (lp *knapsackLP) solve() {
	n, m := len(lp.items), len(lp.a)
	inBasis := make([]bool, n+m)
	for _, j := range lp.basis {
		inBasis[j] = true
	}
	for it := 0; it < lpPivots; it++ {
		q, gain := -1, 1e-12
		for j := range lp.d {
			if inBasis[j] {
				continue
			}
			g := lp.d[j]
			if lp.upper[j] {
				g = -g
			}
			if g > gain {
				q, gain = j, g
				if it >= lpPivots/2 {
					break
				}
			}
		}
		if q < 0 {
			return
		}
		// x_q moves by sigma·step; basic variable i moves by -sigma·tab[i][q]·step
		sigma := 1.0
		if lp.upper[q] {
			sigma = -1
		}
		step, r, leaveUpper := lp.upperOf(q), -1, false
		for i := 0; i < m; i++ {
			alpha := sigma * lp.tab[i][q]
			switch {
			case alpha > 1e-9:
				if s := lp.beta[i] / alpha; s < step {
					step, r, leaveUpper = s, i, false
				}
			case alpha < -1e-9:
				if s := (lp.upperOf(lp.basis[i]) - lp.beta[i]) / -alpha; s < step {
					step, r, leaveUpper = s, i, true
				}
			}
		}
		if math.IsInf(step, 1) {
			return // unbounded: impossible, every variable that has worth is bounded
		}
		step = math.Max(step, 0)
		for i := 0; i < m; i++ {
			lp.beta[i] -= sigma * lp.tab[i][q] * step
		}
		if r < 0 { // x_q reaches its other bound before any basic variable reaches one of its own
			lp.upper[q] = !lp.upper[q]
			continue
		}
		val := step
		if sigma < 0 {
			val = lp.upperOf(q) - step
		}
		row := lp.tab[r]
		p := row[q]
		for k := range row {
			row[k] /= p
		}
		for i := 0; i < m; i++ {
			if f := lp.tab[i][q]; i != r && f != 0 {
				for k, v := range row {
					lp.tab[i][k] -= f * v
				}
			}
		}
		if f := lp.d[q]; f != 0 {
			for k, v := range row {
				lp.d[k] -= f * v
			}
		}
		leave := lp.basis[r]
		inBasis[leave], inBasis[q] = false, true
		lp.basis[r], lp.beta[r] = q, val
		lp.upper[q], lp.upper[leave] = false, leaveUpper
		for i, j := range lp.basis {
			lp.beta[i] = math.Min(math.Max(lp.beta[i], 0), lp.upperOf(j))
		}
	}
}

// pattern rounds the solution down (it still fits: every row is non-negative), then adds pods greedily, most
// worth first, while they fit; nil if it holds nothing.
func (lp *knapsackLP) pattern(ks *knapsack) []float64 {
	n := len(lp.items)
	x := make([]float64, n)
	for j := range x {
		if lp.upper[j] {
			x[j] = lp.lim[j]
		}
	}
	for i, j := range lp.basis {
		if j < n {
			x[j] = math.Floor(lp.beta[i] + 1e-9)
		}
	}
	if !lp.fits(x) {
		clear(x)
	}
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(i, j int) int {
		switch {
		case lp.c[i] > lp.c[j]:
			return -1
		case lp.c[i] < lp.c[j]:
			return 1
		}
		return 0
	})
	for _, j := range order {
		for x[j] < lp.lim[j] {
			x[j]++
			if !lp.fits(x) {
				x[j]--
				break
			}
		}
	}
	a := make([]float64, len(ks.pp.items))
	some := false
	for j, v := range x {
		a[lp.items[j]] = v
		some = some || v > 0
	}
	if !some {
		return nil
	}
	return a
}

// fits reports whether counts x fit every row, capacity rows checked on the unscaled requests.
func (lp *knapsackLP) fits(x []float64) bool {
	for i, row := range lp.raw {
		s := 0.0
		for j, v := range row {
			s += v * x[j]
		}
		if s > lp.rawB[i] {
			return false
		}
	}
	for _, row := range lp.a[len(lp.raw):] {
		s := 0.0
		for j, v := range row {
			s += v * x[j]
		}
		if s > 1 {
			return false
		}
	}
	return true
}

// lpBound bounds the knapsack of type t at y from above by its linear relaxation (see knapsackLP) and returns a
// pattern made from the relaxation's solution (nil if none). The bound is 0 when nothing of worth fits.
func (ks *knapsack) lpBound(t int, y []float64) (float64, []float64) {
	lp := ks.newKnapsackLP(t, y)
	if lp == nil {
		return 0, nil
	}
	lp.solve()
	return lp.bound(), lp.pattern(ks)
}
