package disruption_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestScoreMove(t *testing.T) {
	cases := []struct {
		name                string
		savings, disruption float64
		totals              disruption.PoolTotals
		score               float64
		approved            bool
	}{
		{name: "oversized node replaced (Karpenter's example)", savings: 7.26, disruption: 3, totals: disruption.PoolTotals{Cost: 58.08, DisruptionCost: 80}, score: 3.3333, approved: true},
		{name: "marginal move (Karpenter's example)", savings: 2.42, disruption: 8, totals: disruption.PoolTotals{Cost: 58.08, DisruptionCost: 80}, score: 0.4167},
		{name: "exactly 1/k is approved", savings: 1, disruption: 1, totals: disruption.PoolTotals{Cost: 16, DisruptionCost: 8}, score: 0.5, approved: true},
		{name: "just below 1/k is rejected", savings: 1, disruption: 1.25, totals: disruption.PoolTotals{Cost: 16, DisruptionCost: 8}, score: 0.4},
		{name: "a single-node pool's delete scores 1", savings: 3, disruption: 5, totals: disruption.PoolTotals{Cost: 3, DisruptionCost: 5}, score: 1, approved: true},
		{name: "no savings: rejected", savings: 0, disruption: 1, totals: disruption.PoolTotals{Cost: 4, DisruptionCost: 4}},
		{name: "a loss: rejected", savings: -0.1, disruption: 1, totals: disruption.PoolTotals{Cost: 4, DisruptionCost: 4}},
		{name: "empty NodePool cost: rejected", savings: 1, disruption: 1, totals: disruption.PoolTotals{DisruptionCost: 4}},
		{name: "empty NodePool disruption: rejected", savings: 1, disruption: 1, totals: disruption.PoolTotals{Cost: 4}},
		{name: "no disruption: approved at +Inf", savings: 1, disruption: 0, totals: disruption.PoolTotals{Cost: 4, DisruptionCost: 4}, score: math.Inf(1), approved: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := disruption.ScoreMove("p", tc.savings, tc.disruption, tc.totals, disruption.BalancedK)
			if s.Approved != tc.approved || !(math.Abs(s.Value-tc.score) < 1e-4 || s.Value == tc.score) {
				t.Errorf("score %v approved %v, want %v %v (%s)", s.Value, s.Approved, tc.score, tc.approved, s)
			}
			if s.Threshold != 0.5 {
				t.Errorf("threshold %v, want 0.5", s.Threshold)
			}
		})
	}
}

func TestEvictionCost(t *testing.T) {
	prio := func(p int32) *corev1.Pod { q := pod("x", "1"); q.Spec.Priority = &p; return q }
	deletion := func(v string) *corev1.Pod {
		q := pod("x", "1")
		q.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": v}
		return q
	}
	annotated := func(a map[string]string) *corev1.Pod {
		q := pod("x", "1")
		q.Annotations = a
		return q
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want float64
	}{
		{"default", pod("x", "1"), 1},
		{"deletion cost 2^27", deletion("134217728"), 2},
		{"deletion cost not a number is ignored", deletion("high"), 1},
		{"priority 2^25", prio(1 << 25), 2},
		{"system-node-critical priority is clamped to 10", prio(2000001000), 10},
		{"very negative deletion cost is clamped to -10", deletion("-2147483648"), -10},
		{"disruption cost 2^27", annotated(map[string]string{"karpenter.sh/disruption-cost": "134217728"}), 2},
		{"disruption cost wins over deletion cost", annotated(map[string]string{"karpenter.sh/disruption-cost": "0", "controller.kubernetes.io/pod-deletion-cost": "134217728"}), 1},
		{"disruption cost not a number is ignored, deletion cost not read", annotated(map[string]string{"karpenter.sh/disruption-cost": "x", "controller.kubernetes.io/pod-deletion-cost": "134217728"}), 1},
	}
	for _, tc := range cases {
		if got := disruption.EvictionCost(tc.pod); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// A node's disruption cost: 1 for the node, negative pod costs count 0, DaemonSet pods do not count.
	ds := pod("agent", "100m")
	ds.OwnerReferences = daemonSetOwner()
	if got := disruption.NodeDisruptionCost([]*corev1.Pod{pod("a", "1"), deletion("-2147483648"), ds}); got != 2 {
		t.Errorf("node disruption cost %v, want 2", got)
	}
}

func TestScoreCommand(t *testing.T) {
	balanced := test.NodePool("bal").Obj()
	balanced.Spec.Disruption.ConsolidationPolicy = disruption.PolicyBalanced
	other := test.NodePool("other").Obj()
	balanced2 := test.NodePool("bal2").Obj()
	balanced2.Spec.Disruption.ConsolidationPolicy = disruption.PolicyBalanced
	pools := map[string]*karpv1.NodePool{"bal": balanced, "other": other, "bal2": balanced2}
	// Each NodePool: 4 nodes at $1/h with one pod each: cost 4, disruption cost 8 (1 per node, 1 per pod).
	totals := map[string]disruption.PoolTotals{"bal": {Cost: 4, DisruptionCost: 8}, "other": {Cost: 4, DisruptionCost: 8}, "bal2": {Cost: 4, DisruptionCost: 8}}
	cand := func(name, pool string, price float64) *disruption.Candidate {
		return test.Candidate(name, "medium", price).Pool(pool).Pods(pod(name+"-web", "1")).Obj()
	}
	type verdict struct {
		Pools    []string
		Values   []float64
		Savings  []float64
		Approved bool
	}
	cases := []struct {
		name    string
		cands   []*disruption.Candidate
		savings float64
		want    verdict
	}{
		{name: "delete: saves a quarter of the cost for a quarter of the disruption", cands: []*disruption.Candidate{cand("a", "bal", 1)}, savings: 1,
			want: verdict{Pools: []string{"bal"}, Values: []float64{1}, Savings: []float64{1}, Approved: true}},
		{name: "replace by a node at 60%: rejected", cands: []*disruption.Candidate{cand("a", "bal", 1)}, savings: 0.4,
			want: verdict{Pools: []string{"bal"}, Values: []float64{0.4}, Savings: []float64{0.4}}},
		{name: "replace by a node at half the price: approved", cands: []*disruption.Candidate{cand("a", "bal", 1)}, savings: 0.5,
			want: verdict{Pools: []string{"bal"}, Values: []float64{0.5}, Savings: []float64{0.5}, Approved: true}},
		{name: "a NodePool that is not Balanced is not scored", cands: []*disruption.Candidate{cand("a", "other", 1)}, savings: 0.01,
			want: verdict{Approved: true}},
		{name: "spanning NodePools: savings split by source price, only the Balanced one scored",
			cands: []*disruption.Candidate{cand("a", "bal", 1), cand("b", "other", 3)}, savings: 2,
			// bal: 0.5 of 4 for 2 of 8 -> 0.5
			want: verdict{Pools: []string{"bal"}, Values: []float64{0.5}, Savings: []float64{0.5}, Approved: true}},
		{name: "spanning two Balanced NodePools: one rejects, the move is rejected",
			cands: []*disruption.Candidate{cand("a", "bal", 1), cand("b", "bal2", 1), cand("c", "bal2", 1)}, savings: 1.2,
			// bal: 0.4 of 4 for 2 of 8 -> 0.4; bal2: 0.8 of 4 for 4 of 8 -> 0.4
			want: verdict{Pools: []string{"bal", "bal2"}, Values: []float64{0.4, 0.4}, Savings: []float64{0.4, 0.8}}},
		{name: "spanning two Balanced NodePools: both approve",
			cands: []*disruption.Candidate{cand("a", "bal", 1), cand("b", "bal2", 1)}, savings: 2,
			want: verdict{Pools: []string{"bal", "bal2"}, Values: []float64{1, 1}, Savings: []float64{1, 1}, Approved: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scores, ok := disruption.ScoreCommand(tc.cands, tc.savings, pools, totals, disruption.BalancedK)
			got := verdict{Approved: ok}
			for _, s := range scores {
				got.Pools = append(got.Pools, s.NodePool)
				got.Values = append(got.Values, s.Value)
				got.Savings = append(got.Savings, s.Savings)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideBalanced: a replacement that saves little is left alone by a Balanced NodePool and carried out by a
// WhenEmptyOrUnderutilized one with the same nodes.
func TestDecideBalanced(t *testing.T) {
	snap := func(policy karpv1.ConsolidationPolicy, keeperPrice float64) *disruption.Snapshot {
		np := test.NodePool("default").Obj()
		np.Spec.Disruption.ConsolidationPolicy = policy
		// x needs a medium: on-demand $0.20 -> spot $0.12 saves $0.08/h. y is kept (do-not-disrupt) but counts
		// in the NodePool's totals.
		return world(np, test.Candidate("x", "medium", 0.2).Pods(pod("x-web", "3")).Obj(),
			test.Candidate("y", "large", keeperPrice).Pods(keeper("k", "7")).Obj())
	}
	t.Run("WhenEmptyOrUnderutilized replaces", func(t *testing.T) {
		r, err := disruption.Decide(context.Background(), snap(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, 0.4), disruption.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"underutilized/replace (single): 1 node(s) x, replaced by medium, saving $0.0800/h"}, summarizePass(t, r).Commands); diff != "" {
			t.Errorf("commands (-want +got):\n%s", diff)
		}
		if len(r.Scored) != 0 {
			t.Errorf("scores for a NodePool that is not Balanced: %v", r.Scored)
		}
	})
	t.Run("Balanced keeps it: score 0.27", func(t *testing.T) {
		r, err := disruption.Decide(context.Background(), snap(disruption.PolicyBalanced, 0.4), disruption.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := summarizePass(t, r)
		if len(got.Commands) != 0 || got.Stays["x"] != disruption.StayScore {
			t.Fatalf("pass %+v, want x to stay with %s", got, disruption.StayScore)
		}
		// savings 0.08 of 0.6 = 13.3%; disruption 2 of 4 = 50%; score 0.27
		if len(r.Scored) != 1 || r.Scored[0].Approved || math.Abs(r.Scored[0].Value-0.2667) > 1e-3 {
			t.Errorf("scored %v, want one rejected score 0.27", r.Scored)
		}
		for _, s := range r.Stays {
			if s.NodeClaim == "x" && !strings.Contains(s.Message, "score 0.27 < 0.50") {
				t.Errorf("stay message %q does not give the score", s.Message)
			}
		}
	})
	t.Run("Balanced does not simulate a node even a delete would not justify", func(t *testing.T) {
		r, err := disruption.Decide(context.Background(), snap(disruption.PolicyBalanced, 2.0), disruption.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := summarizePass(t, r)
		if len(got.Commands) != 0 || got.Stays["x"] != disruption.StayScore || len(r.Scored) != 0 {
			t.Fatalf("pass %+v scored %v, want x to stay before any simulation", got, r.Scored)
		}
	})
	t.Run("Balanced keeps only the replacement options that save enough", func(t *testing.T) {
		// x (large, $0.40) with a 1.5-cpu pod; y, kept, the same. Totals $0.80 and 4: replacing x must save at least
		// 0.5 * 2/4 * 0.80 = $0.20, so options above $0.20/h (large spot at $0.24) go; WhenEmptyOrUnderutilized keeps them.
		maxOption := func(policy karpv1.ConsolidationPolicy) float64 {
			np := test.NodePool("default").Obj()
			np.Spec.Disruption.ConsolidationPolicy = policy
			s := world(np, test.Candidate("x", "large", 0.4).Pods(pod("x-web", "1500m")).Obj(),
				test.Candidate("y", "large", 0.4).Pods(keeper("k", "7")).Obj())
			r, err := disruption.Decide(context.Background(), s, disruption.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Command == nil || len(r.Command.Replacements) != 1 {
				t.Fatalf("%s: no replace command: %+v", policy, summarizePass(t, r))
			}
			top := 0.0
			for _, o := range r.Command.Replacements[0].InstanceTypeOptions {
				top = math.Max(top, o.Price)
			}
			return top
		}
		if got := maxOption(disruption.PolicyBalanced); got > 0.2 {
			t.Errorf("Balanced: replacement option at $%.2f/h, above $0.20/h", got)
		}
		if got := maxOption(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized); got <= 0.2 {
			t.Errorf("WhenEmptyOrUnderutilized: most expensive option $%.2f/h, want the large spot at $0.24/h", got)
		}
	})
	t.Run("Balanced approves a delete worth it", func(t *testing.T) {
		np := test.NodePool("default").Obj()
		np.Spec.Disruption.ConsolidationPolicy = disruption.PolicyBalanced
		// x's pod fits on y: deleting x saves 0.2 of 0.6 (33%) for 2 of 4 (50%): score 0.67.
		s := world(np, test.Candidate("x", "medium", 0.2).Pods(pod("x-web", "500m")).Obj(),
			test.Candidate("y", "large", 0.4).Pods(keeper("k", "6")).Obj())
		r, err := disruption.Decide(context.Background(), s, disruption.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Command == nil || len(r.Command.Scores) != 1 || !r.Command.Scores[0].Approved {
			t.Fatalf("no approved command: %+v scored %v", summarizePass(t, r), r.Scored)
		}
	})
}

func TestMinSavings(t *testing.T) {
	balanced := test.NodePool("bal").Obj()
	balanced.Spec.Disruption.ConsolidationPolicy = disruption.PolicyBalanced
	pools := map[string]*karpv1.NodePool{"bal": balanced, "other": test.NodePool("other").Obj()}
	totals := map[string]disruption.PoolTotals{"bal": {Cost: 4, DisruptionCost: 8}, "other": {Cost: 4, DisruptionCost: 8}}
	one := func(name, pool string, price float64) *disruption.Candidate {
		return test.Candidate(name, "medium", price).Pool(pool).Pods(pod(name+"-web", "1")).Obj()
	}
	for _, tc := range []struct {
		name  string
		cands []*disruption.Candidate
		want  float64
	}{
		{"not Balanced: nothing required", []*disruption.Candidate{one("a", "other", 1)}, 0},
		// 2 of 8 disruption: savings/4 >= 0.5 * 0.25
		{"one Balanced node", []*disruption.Candidate{one("a", "bal", 1)}, 0.5},
		// bal gets a quarter of the savings: savings/4/4 >= 0.125
		{"spanning: the Balanced share must suffice", []*disruption.Candidate{one("a", "bal", 1), one("b", "other", 3)}, 2},
		{"zero totals: nothing suffices", []*disruption.Candidate{one("a", "bal", 1)}, math.Inf(1)},
	} {
		tt := totals
		if strings.HasPrefix(tc.name, "zero") {
			tt = map[string]disruption.PoolTotals{}
		}
		if got := disruption.MinSavings(tc.cands, pools, tt, disruption.BalancedK); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		// At exactly the minimum, the move is approved.
		if !math.IsInf(tc.want, 1) && tc.want > 0 {
			if _, ok := disruption.ScoreCommand(tc.cands, tc.want, pools, totals, disruption.BalancedK); !ok {
				t.Errorf("%s: saving the minimum %v is rejected", tc.name, tc.want)
			}
		}
	}
}

func daemonSetOwner() []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: ptrTrue()}}
}
