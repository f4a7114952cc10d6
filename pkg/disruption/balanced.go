package disruption

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// PolicyBalanced is consolidationPolicy: Balanced (Karpenter v1.14): consolidate underutilized nodes only when a
// move's savings are worth its disruption. It is the API's value, named here for the package's callers.
const PolicyBalanced = karpv1.ConsolidationPolicyBalanced

// BalancedK is Karpenter's consolidation threshold k: a Balanced move is approved when its score is at least 1/k.
const BalancedK = 2.0

// podDeletionCostAnnotation is the ReplicaSet controller's scale-down hint, read as a disruption cost.
const podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// EvictionCost is how costly evicting the pod is, as Karpenter rates it: 1, plus its karpenter.sh/disruption-cost
// annotation (or, without it, its controller.kubernetes.io/pod-deletion-cost) divided by 2^27, plus its priority
// divided by 2^25, kept within [-10, 10]. An annotation that is not an int32 is ignored.
func EvictionCost(p *corev1.Pod) float64 { return evictionCost(p, false) }

// evictionCost is EvictionCost; with managed (the PodDeletionCostManagement gate on) the controller writes
// controller.kubernetes.io/pod-deletion-cost itself, so only karpenter.sh/disruption-cost is read, as in Karpenter
// v1.15.
func evictionCost(p *corev1.Pod, managed bool) float64 {
	cost := 1.0
	v, ok := p.Annotations[karpv1.DisruptionCostAnnotationKey]
	if !ok && !managed {
		v, ok = p.Annotations[podDeletionCostAnnotation]
	}
	if ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			cost += float64(n) / (1 << 27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / (1 << 25)
	}
	return math.Max(-10, math.Min(10, cost))
}

// NodeDisruptionCost is what disrupting a node costs for Balanced scoring: 1 for the node itself (so that an
// empty node costs something), plus the eviction cost of each pod that would move, negative costs counting 0.
func NodeDisruptionCost(pods []*corev1.Pod) float64 { return nodeDisruptionCost(pods, false) }

// nodeDisruptionCost is NodeDisruptionCost reading the annotations as evictionCost does.
func nodeDisruptionCost(pods []*corev1.Pod, managed bool) float64 {
	cost := 1.0
	for _, p := range pods {
		if Reschedulable(p) {
			cost += math.Max(0, evictionCost(p, managed))
		}
	}
	return cost
}

// PoolTotals are the sums a NodePool's Balanced scores are fractions of: the hourly price of its nodes and their
// disruption cost.
type PoolTotals struct {
	Cost           float64
	DisruptionCost float64
}

// Score is one NodePool's part of a consolidation move under Balanced.
type Score struct {
	NodePool string
	// Savings is the NodePool's share of the move's savings in $/hour (all of it unless the move spans NodePools:
	// then in proportion to the price of the NodePool's candidates); DisruptionCost that of its candidates.
	Savings        float64
	DisruptionCost float64
	// SavingsFraction and DisruptionFraction are Savings and DisruptionCost over the NodePool's totals.
	SavingsFraction    float64
	DisruptionFraction float64
	// Value is SavingsFraction / DisruptionFraction (0 when nothing is saved), Threshold 1/k.
	Value     float64
	Threshold float64
	Approved  bool
}

// String says the verdict in one line.
func (s Score) String() string {
	op := ">="
	if !s.Approved {
		op = "<"
	}
	return fmt.Sprintf("nodepool %s: score %.2f %s %.2f (saves %.1f%% of its cost for %.1f%% of its disruption cost)",
		s.NodePool, s.Value, op, s.Threshold, 100*s.SavingsFraction, 100*s.DisruptionFraction)
}

// ScoreMove scores a move that saves savings ($/hour) at disruptionCost in a NodePool with the given totals:
// (savings / totals.Cost) / (disruptionCost / totals.DisruptionCost), approved when at least 1/k. A move that
// saves nothing, or a NodePool whose totals are not positive (nothing to compare with), is rejected with score 0;
// a move with no disruption cost and positive savings scores +Inf.
func ScoreMove(pool string, savings, disruptionCost float64, totals PoolTotals, k float64) Score {
	s := Score{NodePool: pool, Savings: savings, DisruptionCost: disruptionCost, Threshold: 1 / k}
	if totals.Cost <= 0 || totals.DisruptionCost <= 0 || savings <= 0 {
		return s
	}
	s.SavingsFraction = savings / totals.Cost
	s.DisruptionFraction = disruptionCost / totals.DisruptionCost
	if s.DisruptionFraction <= 0 {
		s.Value = math.Inf(1)
	} else {
		s.Value = s.SavingsFraction / s.DisruptionFraction
	}
	s.Approved = s.Value >= s.Threshold
	return s
}

// Totals sums the candidates' prices and disruption costs per NodePool: the denominators of Balanced scores.
// Every candidate counts, whatever keeps it (do-not-disrupt, not consolidatable, ...).
func Totals(cands []*Candidate) map[string]PoolTotals {
	out := map[string]PoolTotals{}
	for _, c := range cands {
		t := out[c.NodePool]
		t.Cost += c.Price
		t.DisruptionCost += NodeDisruptionCost(c.Pods)
		out[c.NodePool] = t
	}
	return out
}

// ScoreCommand scores a consolidation move for each of its candidates' NodePools whose policy is Balanced
// (others are not scored): the NodePool's candidates' disruption cost against its share of the move's savings.
// The move is approved when every scored NodePool approves it (true when none is scored).
func ScoreCommand(cands []*Candidate, savings float64, pools map[string]*karpv1.NodePool, totals map[string]PoolTotals, k float64) ([]Score, bool) {
	byPool := map[string][]*Candidate{}
	var names []string
	for _, c := range cands {
		if _, ok := byPool[c.NodePool]; !ok {
			names = append(names, c.NodePool)
		}
		byPool[c.NodePool] = append(byPool[c.NodePool], c)
	}
	sort.Strings(names)
	all := totalPrice(cands)
	var out []Score
	approved := true
	for _, name := range names {
		np := pools[name]
		if np == nil || np.Spec.Disruption.ConsolidationPolicy != PolicyBalanced {
			continue
		}
		part := byPool[name]
		share := savings
		if len(byPool) > 1 && all > 0 {
			share = savings * totalPrice(part) / all
		}
		disruption := 0.0
		for _, c := range part {
			disruption += NodeDisruptionCost(c.Pods)
		}
		s := ScoreMove(name, share, disruption, totals[name], k)
		out = append(out, s)
		approved = approved && s.Approved
	}
	return out, approved
}

// MinSavings is the least a move of cands must save ($/hour) for every Balanced NodePool among them to approve it:
// 0 when none is Balanced, +Inf when a Balanced NodePool cannot approve any saving (its totals, or its candidates'
// price, are zero).
func MinSavings(cands []*Candidate, pools map[string]*karpv1.NodePool, totals map[string]PoolTotals, k float64) float64 {
	byPool := map[string][]*Candidate{}
	for _, c := range cands {
		byPool[c.NodePool] = append(byPool[c.NodePool], c)
	}
	all := totalPrice(cands)
	need := 0.0
	for name, part := range byPool {
		np := pools[name]
		if np == nil || np.Spec.Disruption.ConsolidationPolicy != PolicyBalanced {
			continue
		}
		t := totals[name]
		share := 1.0
		if len(byPool) > 1 {
			if all <= 0 {
				return math.Inf(1)
			}
			share = totalPrice(part) / all
		}
		if t.Cost <= 0 || t.DisruptionCost <= 0 || share <= 0 {
			return math.Inf(1)
		}
		disruption := 0.0
		for _, c := range part {
			disruption += NodeDisruptionCost(c.Pods)
		}
		// share*savings/Cost >= (1/k) * disruption/DisruptionCost
		need = math.Max(need, disruption/t.DisruptionCost*t.Cost/(k*share))
	}
	return need
}
