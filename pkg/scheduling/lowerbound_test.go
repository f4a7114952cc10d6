package scheduling

import (
	"math"
	"testing"
)

func TestCoverLPSolve(t *testing.T) {
	tests := []struct {
		name string
		lp   coverLP
		want float64
	}{
		{name: "no rows", lp: coverLP{cost: []float64{1}}, want: 0},
		{name: "one row picks the cheapest per unit", lp: coverLP{cost: []float64{2, 3}, rows: [][]float64{{0.5, 1}}}, want: 3},
		// min 2a+3b s.t. a+b >= 4, a+3b >= 6: optimum at a=3, b=1
		{name: "two rows meet at a vertex", lp: coverLP{cost: []float64{2, 3}, rows: [][]float64{{0.25, 0.25}, {1.0 / 6, 0.5}}}, want: 9},
		{name: "a column no row needs", lp: coverLP{cost: []float64{1, 5}, rows: [][]float64{{0, 0.1}}}, want: 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.lp.solve(); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("solve() = %v, want %v", got, tc.want)
			}
		})
	}
}
