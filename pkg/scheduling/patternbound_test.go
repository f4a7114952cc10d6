package scheduling

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestKnapsackBoundsHold checks the pattern bound's knapsack bounds against every pattern, enumerated, on small
// random cases: the Lagrangian, the dynamic program on a coarse grid and cpuBound must never be below the best
// pattern's worth (the bound would not hold), the dynamic program on an exact grid must find it, and every pattern
// it returns must fit.
func TestKnapsackBoundsHold(t *testing.T) {
	const mi = 1 << 20
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		pp := &patternProgram{dims: []int{dimCPU, dimMemory}, cpu: 0, mem: 1, groups: 1}
		for range 1 + r.Intn(3) {
			c := float64(500 + 250*r.Intn(8))
			m := float64((256 + 128*r.Intn(16)) * mi)
			pp.cols = append(pp.cols, boundCol{price: 0.01 + r.Float64()})
			pp.cap = append(pp.cap, []float64{c, m})
		}
		all := fitSet{1<<len(pp.cols) - 1}
		for k := range 2 + r.Intn(4) {
			it := patternItem{req: []float64{float64(50 * (1 + r.Intn(12))), float64(4 * mi * (16 + r.Intn(200)))}, fit: all, demand: 1000}
			if k < 2 && r.Intn(2) == 0 {
				it.anti = []int{0}
			}
			pp.items = append(pp.items, it)
		}
		y := make([]float64, len(pp.items))
		for k := range y {
			y[k] = r.Float64() * 0.05
		}
		ks := newKnapsack(pp)
		for ti := range pp.cols {
			best := bestPattern(pp, ti, y)
			if ub := ks.searchLambda(ti, y); ub < best-1e-9 {
				t.Errorf("seed %d type %d: Lagrangian %.6f below the best pattern %.6f", seed, ti, ub, best)
			}
			if ub := ks.cpuBound(ti, y); ub < best-1e-9 {
				t.Errorf("seed %d type %d: cpuBound %.6f below the best pattern %.6f", seed, ti, ub, best)
			}
			for _, cells := range []int{64, dpCells} {
				ub, patterns, exact := ks.dpBound(ti, y, cells)
				if ub < best-1e-9 {
					t.Errorf("seed %d type %d cells %d: dynamic program %.6f below the best pattern %.6f", seed, ti, cells, ub, best)
				}
				if exact && math.Abs(ub-best) > 1e-9 {
					t.Errorf("seed %d type %d: exact dynamic program %.6f, best pattern %.6f", seed, ti, ub, best)
				}
				for _, a := range patterns {
					if !ks.feasible(ti, a) || patternWorth(a, y) > best+1e-9 {
						t.Errorf("seed %d type %d cells %d: pattern %v does not fit or is worth more than the best", seed, ti, cells, a)
					}
				}
			}
		}
	}
}

// bestPattern enumerates the patterns of type t and returns the greatest worth at y.
func bestPattern(pp *patternProgram, t int, y []float64) float64 {
	ks := newKnapsack(pp)
	a := make([]float64, len(pp.items))
	var walk func(k int) float64
	walk = func(k int) float64 {
		if k == len(pp.items) {
			return patternWorth(a, y)
		}
		best := 0.0
		for n := 0; n <= pp.maxCopies(k, t); n++ {
			a[k] = float64(n)
			if !ks.feasible(t, a) {
				break
			}
			best = math.Max(best, walk(k+1))
		}
		a[k] = 0
		return best
	}
	return walk(0)
}

// TestKnapsackLPBoundHolds checks the knapsack's linear relaxation against every pattern, enumerated, on small
// random cases with what the dynamic program drops: a pod-count dimension, copy limits below what fits, and items
// in several anti-affinity groups. Its bound must never be below the best pattern's worth, must be no looser than
// the Lagrangian search's (both relax the same capacity rows, and the simplex finds the best multipliers), and its
// pattern must fit and be worth no more than the best. The dynamic program and cpuBound, which drop those, must
// still hold.
func TestKnapsackLPBoundHolds(t *testing.T) {
	tight, found := 0, 0
	for seed := int64(0); seed < 400; seed++ {
		pp, y := randomKnapsacks(rand.New(rand.NewSource(seed)))
		ks := newKnapsack(pp)
		for ti := range pp.cols {
			best := bestPattern(pp, ti, y)
			ub, a := ks.lpBound(ti, y)
			if ub < best-1e-9 {
				t.Errorf("seed %d type %d: linear relaxation %.6f below the best pattern %.6f", seed, ti, ub, best)
			}
			if lag := ks.searchLambda(ti, y); ub > lag+1e-9 {
				t.Errorf("seed %d type %d: linear relaxation %.6f above the Lagrangian bound %.6f", seed, ti, ub, lag)
			}
			// what the other bounds drop here must only loosen them
			if cb := ks.cpuBound(ti, y); cb < best-1e-9 {
				t.Errorf("seed %d type %d: cpuBound %.6f below the best pattern %.6f", seed, ti, cb, best)
			}
			for _, cells := range []int{64, dpCells} {
				if db, _, _ := ks.dpBound(ti, y, cells); db < best-1e-9 {
					t.Errorf("seed %d type %d cells %d: dynamic program %.6f below the best pattern %.6f", seed, ti, cells, db, best)
				}
			}
			if a == nil {
				continue
			}
			for k, n := range a {
				if n > float64(pp.maxCopies(k, ti)) {
					t.Errorf("seed %d type %d: pattern %v holds more of item %d than its limit", seed, ti, a, k)
				}
			}
			if !ks.feasible(ti, a) || patternWorth(a, y) > best+1e-9 {
				t.Errorf("seed %d type %d: pattern %v does not fit or is worth more than the best", seed, ti, a)
			}
			if ub < best+1e-9 {
				tight++
			}
			if patternWorth(a, y) > best-1e-9 {
				found++
			}
		}
	}
	// the cases must reach the relaxation's edge: some where it is exact, and patterns that are the best
	if tight == 0 || found == 0 {
		t.Errorf("%d cases with the bound exact, %d with the best pattern found: want some of each", tight, found)
	}
}

// randomKnapsacks draws a small pattern program for the knapsack tests, with what the dynamic program drops: a
// pod-count dimension (half the time), copy limits below what fits, and items in several anti-affinity groups; and
// dual prices for its items.
func randomKnapsacks(r *rand.Rand) (*patternProgram, []float64) {
	const mi = 1 << 20
	pp := &patternProgram{dims: []int{dimCPU, dimMemory}, cpu: 0, mem: 1, groups: r.Intn(3)}
	pods := r.Intn(2) == 0
	if pods {
		pp.dims = append(pp.dims, dimPods)
	}
	for range 1 + r.Intn(3) {
		c := []float64{float64(500 + 250*r.Intn(8)), float64((256 + 128*r.Intn(16)) * mi)}
		if pods {
			c = append(c, float64(2+r.Intn(8)))
		}
		pp.cols = append(pp.cols, boundCol{price: 0.01 + r.Float64()})
		pp.cap = append(pp.cap, c)
	}
	all := fitSet{1<<len(pp.cols) - 1}
	for range 2 + r.Intn(4) {
		req := []float64{float64(50 * (1 + r.Intn(12))), float64(4 * mi * (16 + r.Intn(200)))}
		if pods {
			req = append(req, 1)
		}
		it := patternItem{req: req, fit: all, demand: float64(1 + r.Intn(12))}
		for g := 0; g < pp.groups; g++ {
			if r.Intn(3) == 0 {
				it.anti = append(it.anti, g)
			}
		}
		pp.items = append(pp.items, it)
	}
	y := make([]float64, len(pp.items))
	for k := range y {
		y[k] = r.Float64() * 0.05
	}
	return pp, y
}

// TestPatternRefineHolds checks θ from price and from refine against the best pattern of every type, enumerated,
// on small random cases with the grids shrunk so that the dynamic program is never exact: both must be at least
// the greatest ratio of a best pattern's worth to its type's price (else the bound would not hold), refine must
// never loosen θ, and every pattern either returns must fit and be worth more than its price. The prices are
// scaled so that the best ratio is near one, where refine works.
func TestPatternRefineHolds(t *testing.T) {
	lowered, reached := 0, 0
	for seed := int64(0); seed < 400; seed++ {
		r := rand.New(rand.NewSource(seed))
		pp, y := randomKnapsacks(r)
		pp.grid = dpGrid{coarse: 16, fine: 64, refine: 4096}
		pp.active = pp.undominated()
		want := 0.0
		for ti := range pp.cols {
			want = math.Max(want, bestPattern(pp, ti, y)/pp.cols[ti].price)
		}
		if want == 0 {
			continue
		}
		scale := (0.97 + 0.05*r.Float64()) / want
		for k := range y {
			y[k] *= scale
		}
		want *= scale
		ks := newKnapsack(pp)
		theta, found, tb := pp.price(ks, y, pp.grid.fine)
		refined, more := pp.refine(ks, y, tb)
		if theta < want-1e-9 || refined < want-1e-9 {
			t.Errorf("seed %d: θ %.6f from price, %.6f refined, below the best ratio %.6f", seed, theta, refined, want)
		}
		if refined > theta+1e-9 {
			t.Errorf("seed %d: refine loosened θ from %.6f to %.6f", seed, theta, refined)
		}
		for _, f := range append(found, more...) {
			ti := slices.IndexFunc(pp.cols, func(c boundCol) bool { return c.price == f.price })
			if !ks.feasible(ti, f.a) || patternWorth(f.a, y) <= f.price {
				t.Errorf("seed %d: pattern %v of type %d does not fit or does not improve", seed, f.a, ti)
			}
		}
		if refined < theta-1e-9 {
			lowered++
		}
		if refined < want+1e-9 {
			reached++
		}
	}
	// the cases must exercise refine: some where it lowers θ, some where θ reaches the best ratio
	if lowered == 0 || reached == 0 {
		t.Errorf("refine lowered θ in %d cases and reached the best ratio in %d: want some of each", lowered, reached)
	}
	t.Logf("refine lowered θ in %d cases and reached the best ratio in %d", lowered, reached)
}
