package disruption

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Rules against wasted moves: a move is wasted when a node is launched and removed again soon after (billed for
// nothing, its pods evicted twice), or when a node is replaced by one that costs as much.
const (
	// FreshReplacementAge is how long a node a disruption command launched (a replacement) counts as fresh.
	FreshReplacementAge = 10 * time.Minute
	// FreshMarginShare is the share of the fresh replacements' hourly price a consolidation command that disrupts
	// them must save: undoing a replacement throws away its launch and evicts its pods a second time, so only a
	// move that gives back at least half of what the fresh nodes cost is worth it. Deleting an empty fresh node
	// saves its whole price and always clears the margin.
	FreshMarginShare = 0.5
)

// fresh reports whether the candidate is a replacement launched less than FreshReplacementAge before now.
func (c *Candidate) fresh(now time.Time) bool {
	return c.Replacement && !c.CreatedAt.IsZero() && now.Sub(c.CreatedAt) < FreshReplacementAge
}

// freshMargin is the hourly saving a command disrupting cands must clear because some of them are fresh
// replacements, with how many are; 0 when none is.
func freshMargin(cands []*Candidate, now time.Time) (float64, int) {
	margin, n := 0.0, 0
	for _, c := range cands {
		if c.fresh(now) {
			margin += FreshMarginShare * c.Price
			n++
		}
	}
	return margin, n
}

// clearsFreshMargin says why a consolidation command that undoes fresh replacements is not worth it, or "".
func clearsFreshMargin(cmd *Command, now time.Time) string {
	margin, n := freshMargin(cmd.Candidates, now)
	if n == 0 || cmd.Savings >= margin-1e-9 {
		return ""
	}
	return fmt.Sprintf("it would undo %d replacement(s) launched less than %s ago to save $%.4f/h, below the margin of $%.4f/h (%.0f%% of their price)",
		n, FreshReplacementAge, cmd.Savings, margin, FreshMarginShare*100)
}

// pruneNoSaving takes out of a replace command every candidate whose pods all go to one replacement that holds
// none of the other candidates' pods and costs at least as much as the candidate: that pair saves nothing and
// only evicts pods (a busy node replaced by an identical one). The pair's replacement leaves the command with
// it. It returns the candidates taken out; the command's Decision and Savings are updated.
func pruneNoSaving(cmd *Command) []*Candidate {
	if len(cmd.Replacements) == 0 || len(cmd.Candidates) == 0 {
		return nil
	}
	owner := map[types.NamespacedName]int{}
	for i, c := range cmd.Candidates {
		for _, p := range c.reschedulablePods() {
			owner[podKey(p)] = i
		}
	}
	// sole[i] is the one replacement holding every pod of candidate i and no other candidate's pod, or -1.
	sole := make([]int, len(cmd.Candidates))
	for i := range sole {
		sole[i] = -1
	}
	onReplacement := map[int]int{}
	for k, r := range cmd.Replacements {
		cand := -1
		for _, key := range r.Pods {
			i, ok := owner[key]
			if !ok || (cand >= 0 && i != cand) {
				cand = -2
				break
			}
			cand = i
		}
		if cand >= 0 {
			if sole[cand] != -1 {
				sole[cand] = -2 // its pods are on several replacements: a split, not a like-for-like swap
				continue
			}
			sole[cand] = k
			onReplacement[cand] = len(r.Pods)
		}
	}
	dropR := map[int]bool{}
	var keep, pruned []*Candidate
	for i, c := range cmd.Candidates {
		k := sole[i]
		if k >= 0 && onReplacement[i] == len(c.reschedulablePods()) && cmd.Replacements[k].Price >= c.Price-1e-9 && !dropR[k] {
			dropR[k] = true
			pruned = append(pruned, c)
			continue
		}
		keep = append(keep, c)
	}
	if len(pruned) == 0 {
		return nil
	}
	var rs []*scheduling.NodeClaimPlan
	for k, r := range cmd.Replacements {
		if !dropR[k] {
			rs = append(rs, r)
		}
	}
	cmd.Candidates, cmd.Replacements = keep, rs
	if len(rs) == 0 {
		cmd.Decision = DecisionDelete
	}
	cmd.Savings = totalPrice(keep) - replacementPrice(rs)
	return pruned
}
