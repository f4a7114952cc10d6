package disruption

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// TestRecordEfficiency: the efficiency gauges follow the last pass, evictions per dollar is 0 without savings.
func TestRecordEfficiency(t *testing.T) {
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Metrics: m})
	snap := &core.Snapshot{}
	for _, tc := range []struct {
		res                core.Result
		savings, perDollar float64
	}{
		{core.Result{SavingsPerHour: 0.5, Evictions: 4}, 0.5, 8},
		{core.Result{SavingsPerHour: 0, Evictions: 3}, 0, 0},
		{core.Result{}, 0, 0},
	} {
		c.record(&tc.res, snap, 0)
		if got := testutil.ToFloat64(m.DisruptionSavings); got != tc.savings {
			t.Errorf("%+v: savings gauge %v, want %v", tc.res, got, tc.savings)
		}
		if got := testutil.ToFloat64(m.DisruptionEvictionsPerDollar); got != tc.perDollar {
			t.Errorf("%+v: evictions per dollar %v, want %v", tc.res, got, tc.perDollar)
		}
	}
}
