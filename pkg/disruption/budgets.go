package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Unlimited is the allowance of a reason no active budget limits.
const Unlimited = math.MaxInt32

// Reasons are the disruption reasons budgets can name, in the order methods run.
var reasons = []karpv1.DisruptionReason{
	karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized,
}

// Reasons returns the disruption reasons budgets can name, in the order the methods run.
func Reasons() []karpv1.DisruptionReason { return append([]karpv1.DisruptionReason(nil), reasons...) }

// BudgetError says a NodePool's budget could not be read (a malformed schedule or node count that got past
// validation, e.g. from an older API server).
type BudgetError struct {
	NodePool string
	Index    int
	Err      error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("nodepool %s: spec.disruption.budgets[%d]: %v", e.NodePool, e.Index, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// AllowedDisruptions returns, for each reason, how many more of the NodePool's nodes may be disrupted at now:
// the smallest node count among the budgets active at now that apply to the reason (a percentage of total,
// rounded up), less the nodes already disrupting, never below 0. A reason no active budget limits gets
// Unlimited less disrupting.
func AllowedDisruptions(np *karpv1.NodePool, now time.Time, total, disrupting int) (map[karpv1.DisruptionReason]int, error) {
	return allowed(np, now, total, disrupting, reasons)
}

// AllowedRepairs returns how many more of the NodePool's nodes node repair may replace at now: the allowance of
// the reason Unhealthy (Karpenter v1.15), limited by the active budgets that name it or name no reason, computed
// as AllowedDisruptions computes the others.
func AllowedRepairs(np *karpv1.NodePool, now time.Time, total, disrupting int) (int, error) {
	out, err := allowed(np, now, total, disrupting, []karpv1.DisruptionReason{karpv1.DisruptionReasonUnhealthy})
	if err != nil {
		return 0, err
	}
	return out[karpv1.DisruptionReasonUnhealthy], nil
}

func allowed(np *karpv1.NodePool, now time.Time, total, disrupting int, rs []karpv1.DisruptionReason) (map[karpv1.DisruptionReason]int, error) {
	out := map[karpv1.DisruptionReason]int{}
	for _, r := range rs {
		out[r] = Unlimited
	}
	for i, b := range np.Spec.Disruption.Budgets {
		active, err := budgetActive(b, now)
		if err != nil {
			return nil, &BudgetError{NodePool: np.Name, Index: i, Err: err}
		}
		if !active {
			continue
		}
		n, err := budgetNodes(b.Nodes, total)
		if err != nil {
			return nil, &BudgetError{NodePool: np.Name, Index: i, Err: err}
		}
		for _, r := range rs {
			if len(b.Reasons) > 0 && !containsReason(b.Reasons, r) {
				continue
			}
			out[r] = min(out[r], n)
		}
	}
	for r, n := range out {
		out[r] = max(0, n-disrupting)
	}
	return out, nil
}

func containsReason(rs []karpv1.DisruptionReason, r karpv1.DisruptionReason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// budgetNodes reads "5" or "10%" (of total, rounded up).
func budgetNodes(s string, total int) (int, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 100 {
			return 0, fmt.Errorf("nodes %q is not a percentage from 0%% to 100%%", s)
		}
		return int(math.Ceil(float64(v) * float64(total) / 100)), nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("nodes %q is not a non-negative integer or a percentage", s)
	}
	return v, nil
}

// budgetActive reports whether a budget applies at now: always without a schedule, otherwise when the
// schedule last fired at most Duration ago (schedules are in UTC).
func budgetActive(b karpv1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("schedule %q has no duration", *b.Schedule)
	}
	sched, err := cron.ParseStandard(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("schedule %q: %w", *b.Schedule, err)
	}
	now = now.UTC()
	// The first firing after (now - duration) is at or before now exactly when a window covers now.
	next := sched.Next(now.Add(-b.Duration.Duration))
	return !next.After(now), nil
}
