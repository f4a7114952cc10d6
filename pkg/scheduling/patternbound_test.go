package scheduling

import (
	"math"
	"math/rand"
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
