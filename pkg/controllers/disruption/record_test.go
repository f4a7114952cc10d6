package disruption

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/scheduling"
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

// TestRecordNodesConsumingBudgets: after a pass, each NodePool's nodes being disrupted are reported for every
// reason its budgets were computed for.
func TestRecordNodesConsumingBudgets(t *testing.T) {
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Metrics: m})
	snap := &core.Snapshot{Disrupting: map[string]int{"web": 2}, NodeCounts: map[string]int{"web": 5, "batch": 1}}
	res := &core.Result{Allowed: map[string]map[karpv1.DisruptionReason]int{
		"web":   {karpv1.DisruptionReasonDrifted: 1, karpv1.DisruptionReasonEmpty: 3},
		"batch": {karpv1.DisruptionReasonDrifted: 1},
	}}
	c.record(res, snap, 0)
	for _, tc := range []struct {
		pool, reason string
		want         float64
	}{{"web", "drifted", 2}, {"web", "empty", 2}, {"batch", "drifted", 0}} {
		if got := testutil.ToFloat64(m.NodePoolNodesConsumingBudgets.WithLabelValues(tc.pool, tc.reason)); got != tc.want {
			t.Errorf("nodes_consuming_budgets{%s,%s} = %v, want %v", tc.pool, tc.reason, got, tc.want)
		}
	}
}

// TestReplacementNodePoolGoneFailsValidation: a command whose replacement's NodePool is gone since the decision
// does not start, and its candidates count as failed validations of its consolidation type.
func TestReplacementNodePoolGoneFailsValidation(t *testing.T) {
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Metrics: m})
	st := &state{View: &View{Claims: []karpv1.NodeClaim{{}, {}}, NodePools: map[string]*karpv1.NodePool{}}}
	st.Claims[0].Name, st.Claims[1].Name = "a", "b"
	cmd := &core.Command{Reason: karpv1.DisruptionReasonUnderutilized, Decision: "replace", ConsolidationType: "multi",
		Candidates:   []*core.Candidate{{NodeClaim: "a", NodePool: "web"}, {NodeClaim: "b", NodePool: "web"}},
		Replacements: []*scheduling.NodeClaimPlan{{NodePool: "gone"}}}
	s, err := c.prepare(context.Background(), st, nil, cmd)
	if err != nil || s != nil {
		t.Fatalf("prepare = %v, %v; want no command and no error", s, err)
	}
	if got := testutil.ToFloat64(m.DisruptionFailedValidations.WithLabelValues("multi")); got != 2 {
		t.Errorf("failed_validations_total{multi} = %v, want 2 (one a candidate)", got)
	}
}
