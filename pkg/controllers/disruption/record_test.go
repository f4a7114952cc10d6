package disruption

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
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
		if got := testutil.CollectAndCount(m.ConsolidationScore); got != 0 {
			t.Errorf("%d consolidation score series without scores", got)
		}
		if got := testutil.ToFloat64(m.DisruptionSavings); got != tc.savings {
			t.Errorf("%+v: savings gauge %v, want %v", tc.res, got, tc.savings)
		}
		if got := testutil.ToFloat64(m.DisruptionEvictionsPerDollar); got != tc.perDollar {
			t.Errorf("%+v: evictions per dollar %v, want %v", tc.res, got, tc.perDollar)
		}
	}
}

// TestRecordBalancedScores: every Balanced score is observed by decision; other policies' moves are counted approved.
func TestRecordBalancedScores(t *testing.T) {
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Metrics: m})
	plain := &karpv1.NodePool{}
	plain.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	snap := &core.Snapshot{NodePools: map[string]*karpv1.NodePool{"plain": plain}}
	res := &core.Result{
		Scored: []core.Score{{NodePool: "bal", Value: 0.3}, {NodePool: "bal", Value: 0.8, Approved: true}},
		Commands: []*core.Command{{Reason: karpv1.DisruptionReasonUnderutilized,
			Candidates: []*core.Candidate{{NodeClaim: "a", NodePool: "plain"}, {NodeClaim: "b", NodePool: "plain"}}}},
	}
	c.record(res, snap, 0)
	for _, tc := range []struct {
		decision, pool, policy string
		want                   float64
	}{
		{"rejected", "bal", "Balanced", 1},
		{"approved", "bal", "Balanced", 1},
		{"approved", "plain", "WhenEmptyOrUnderutilized", 1},
	} {
		if got := testutil.ToFloat64(m.ConsolidationMoves.WithLabelValues(tc.decision, tc.pool, tc.policy)); got != tc.want {
			t.Errorf("moves %s/%s/%s = %v, want %v", tc.decision, tc.pool, tc.policy, got, tc.want)
		}
	}
	if got := testutil.CollectAndCount(m.ConsolidationScore); got != 2 {
		t.Errorf("%d score series, want 2 (approved and rejected)", got)
	}
}
