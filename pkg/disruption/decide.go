package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Default limits of the consolidation searches (Karpenter's).
const (
	DefaultMultiNodeTimeout       = time.Minute
	DefaultSingleNodeTimeout      = 3 * time.Minute
	DefaultMaxMultiNodeCandidates = 100
)

// decider holds one pass's state.
type decider struct {
	snap *Snapshot
	opts Options
	// busy is why consolidation waits this pass: Snapshot.Busy, or pending pods that could be placed.
	busy    string
	allowed map[string]map[karpv1.DisruptionReason]int
	stays   map[string]Stay
	result  *Result
}

// Decide runs the methods in order (drift, emptiness, multi-node then single-node consolidation) and returns the
// first command one of them finds, with why every other candidate stays. It is deterministic for a given
// snapshot, except that a consolidation search cut short by its timeout keeps the best result found so far.
func Decide(ctx context.Context, snap *Snapshot, opts Options) (*Result, error) {
	if snap == nil || snap.Cluster == nil {
		return nil, errors.New("disruption: nil snapshot")
	}
	if opts.MultiNodeTimeout <= 0 {
		opts.MultiNodeTimeout = DefaultMultiNodeTimeout
	}
	if opts.SingleNodeTimeout <= 0 {
		opts.SingleNodeTimeout = DefaultSingleNodeTimeout
	}
	if opts.MaxMultiNodeCandidates <= 0 {
		opts.MaxMultiNodeCandidates = DefaultMaxMultiNodeCandidates
	}
	d := &decider{snap: snap, opts: opts, stays: map[string]Stay{}, allowed: map[string]map[karpv1.DisruptionReason]int{},
		result: &Result{Eligible: map[karpv1.DisruptionReason]int{}, Allowed: map[string]map[karpv1.DisruptionReason]int{}}}
	if err := d.budgets(); err != nil {
		return nil, err
	}
	var open []*Candidate
	for _, c := range sortedCandidates(snap.Candidates) {
		if s := blocker(c, snap.NodePools, snap.PodDisruptionBudgets); s != nil {
			d.stay(*s)
			continue
		}
		open = append(open, c)
	}
	d.busy = snap.Busy
	// Planning the pending pods costs a solve: only when consolidation could take some candidate.
	if d.busy == "" && len(snap.Pending) > 0 && slices.ContainsFunc(open, func(c *Candidate) bool { return c.Consolidatable }) {
		busy, err := pendingPlaceable(ctx, snap, opts.Scheduling)
		if err != nil {
			return nil, err
		}
		d.busy = busy
	}
	d.result.Waiting = d.busy
	methods := []func(context.Context, []*Candidate) (*Command, error){d.drift, d.emptiness, d.wholeCluster, d.unlessSettled(d.multiNode), d.unlessSettled(d.singleNode)}
	for _, m := range methods {
		cmd, err := m(ctx, open)
		if err != nil {
			return nil, err
		}
		if cmd != nil {
			d.result.Command = cmd
			break
		}
	}
	d.finish(open)
	return d.result, nil
}

func sortedCandidates(in []*Candidate) []*Candidate {
	out := append([]*Candidate(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].NodeClaim < out[j].NodeClaim })
	return out
}

// budgets computes every NodePool's allowance per reason.
func (d *decider) budgets() error {
	names := make([]string, 0, len(d.snap.NodePools))
	for name := range d.snap.NodePools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a, err := AllowedDisruptions(d.snap.NodePools[name], d.snap.Now, d.snap.NodeCounts[name], d.snap.Disrupting[name])
		if err != nil {
			return fmt.Errorf("computing disruption budgets: %w", err)
		}
		d.allowed[name] = a
		d.result.Allowed[name] = maps(a)
	}
	return nil
}

func maps(in map[karpv1.DisruptionReason]int) map[karpv1.DisruptionReason]int {
	out := make(map[karpv1.DisruptionReason]int, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// stay records why a candidate stays, keeping the first reason found.
func (d *decider) stay(s Stay) {
	if _, ok := d.stays[s.NodeClaim]; !ok {
		d.stays[s.NodeClaim] = s
	}
}

func (d *decider) stayf(c *Candidate, r StayReason, format string, args ...any) {
	d.stay(Stay{NodeClaim: c.NodeClaim, Node: c.Node, Reason: r, Message: fmt.Sprintf(format, args...)})
}

// finish fills Stays for every candidate outside the command, sorted by NodeClaim.
func (d *decider) finish(open []*Candidate) {
	inCommand := map[string]bool{}
	if cmd := d.result.Command; cmd != nil {
		for _, c := range cmd.Candidates {
			inCommand[c.NodeClaim] = true
		}
		for _, c := range open {
			if !inCommand[c.NodeClaim] {
				d.stayf(c, StayBusy, "another disruption goes first: %s", cmd.Message())
			}
		}
	}
	for _, c := range open {
		if !inCommand[c.NodeClaim] {
			d.stayf(c, StayNoCheaper, "no disruption method applies: it is not drifted, not empty, and consolidating it would not save money")
		}
	}
	for name, s := range d.stays {
		if !inCommand[name] {
			d.result.Stays = append(d.result.Stays, s)
		}
	}
	sort.Slice(d.result.Stays, func(i, j int) bool { return d.result.Stays[i].NodeClaim < d.result.Stays[j].NodeClaim })
}

// take returns the candidates whose NodePool's budget for reason still has room, in order, consuming it; those
// without room get a Budget stay.
func (d *decider) take(cands []*Candidate, reason karpv1.DisruptionReason, limit int) []*Candidate {
	left := map[string]int{}
	var out []*Candidate
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		n, ok := left[c.NodePool]
		if !ok {
			n = d.allowed[c.NodePool][reason]
		}
		if n <= 0 {
			d.stayf(c, StayBudget, "the disruption budgets of nodepool %s allow no more %s disruptions now", c.NodePool, reason)
			left[c.NodePool] = 0
			continue
		}
		left[c.NodePool] = n - 1
		out = append(out, c)
	}
	return out
}

// drift replaces one drifted node at a time (all drifted empty ones at once), as budgets allow.
func (d *decider) drift(ctx context.Context, open []*Candidate) (*Command, error) {
	var drifted, empty []*Candidate
	for _, c := range open {
		if c.Drifted == "" {
			continue
		}
		drifted = append(drifted, c)
		if len(c.reschedulablePods()) == 0 {
			empty = append(empty, c)
		}
	}
	d.result.Eligible[karpv1.DisruptionReasonDrifted] = len(drifted)
	if len(empty) > 0 {
		if cs := d.take(empty, karpv1.DisruptionReasonDrifted, len(empty)); len(cs) > 0 {
			return &Command{Reason: karpv1.DisruptionReasonDrifted, Decision: DecisionDelete, Candidates: cs, Savings: totalPrice(cs)}, nil
		}
	}
	sortByCost(drifted)
	for _, c := range d.take(drifted, karpv1.DisruptionReasonDrifted, len(drifted)) {
		sim, err := simulate(ctx, d.snap, []*Candidate{c}, d.opts.Scheduling)
		if err != nil {
			return nil, err
		}
		if sim.Unschedulable != "" {
			d.stayf(c, StayPodsDoNotFit, "drifted (%s), but it cannot be replaced: %s", c.Drifted, sim.Unschedulable)
			continue
		}
		cmd := &Command{Reason: karpv1.DisruptionReasonDrifted, Decision: DecisionDelete, Candidates: []*Candidate{c}, Replacements: sim.Replacements}
		if len(sim.Replacements) > 0 {
			cmd.Decision = DecisionReplace
		}
		cmd.Savings = c.Price - replacementPrice(sim.Replacements)
		return cmd, nil
	}
	return nil, nil
}

func replacementPrice(rs []*scheduling.NodeClaimPlan) float64 {
	var sum float64
	for _, r := range rs {
		sum += r.Price
	}
	return sum
}

// consolidatable returns the open candidates consolidation may look at for the policy filter, recording stays
// for the others.
func (d *decider) consolidatable(open []*Candidate, underutilized bool) []*Candidate {
	var out []*Candidate
	for _, c := range open {
		np := d.snap.NodePools[c.NodePool]
		if np.Spec.Disruption.ConsolidateAfter.IsNever() && np.Spec.Disruption.ConsolidateAfter.Raw != nil {
			d.stayf(c, StayPolicy, "nodepool %s has consolidateAfter: Never", c.NodePool)
			continue
		}
		if !c.Consolidatable {
			d.stayf(c, StayNotConsolidatable, "pods were scheduled or removed less than consolidateAfter (%s) ago", np.Spec.Disruption.ConsolidateAfter)
			continue
		}
		if underutilized && np.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty {
			d.stayf(c, StayPolicy, "it has pods, and nodepool %s consolidates only empty nodes (consolidationPolicy: WhenEmpty)", c.NodePool)
			continue
		}
		if d.busy != "" {
			d.stayf(c, StayBusy, "consolidation waits: %s", d.busy)
			continue
		}
		out = append(out, c)
	}
	return out
}

// emptiness deletes every consolidatable node without reschedulable pods, as budgets allow.
func (d *decider) emptiness(_ context.Context, open []*Candidate) (*Command, error) {
	var empty []*Candidate
	for _, c := range open {
		if len(c.reschedulablePods()) == 0 {
			empty = append(empty, c)
		}
	}
	empty = d.consolidatable(empty, false)
	d.result.Eligible[karpv1.DisruptionReasonEmpty] = len(empty)
	cs := d.take(empty, karpv1.DisruptionReasonEmpty, len(empty))
	if len(cs) == 0 {
		return nil, nil
	}
	return &Command{Reason: karpv1.DisruptionReasonEmpty, ConsolidationType: ConsolidationEmpty, Decision: DecisionDelete,
		Candidates: cs, Savings: totalPrice(cs)}, nil
}

// underutilized returns the consolidatable candidates with pods, cheapest to disrupt first.
func (d *decider) underutilized(open []*Candidate) []*Candidate {
	var busy []*Candidate
	for _, c := range open {
		if len(c.reschedulablePods()) > 0 {
			busy = append(busy, c)
		}
	}
	out := d.consolidatable(busy, true)
	d.result.Eligible[karpv1.DisruptionReasonUnderutilized] = len(out)
	sortByCost(out)
	return out
}

// consolidate checks whether removing cands (and launching at most one cheaper node) keeps every pod placed.
func (d *decider) consolidate(ctx context.Context, cands []*Candidate, kind string) (*Command, StayReason, string, error) {
	sim, err := simulate(ctx, d.snap, cands, d.opts.Scheduling)
	if err != nil {
		return nil, "", "", err
	}
	if sim.Unschedulable != "" {
		return nil, StayPodsDoNotFit, sim.Unschedulable, nil
	}
	price := totalPrice(cands)
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: kind, Candidates: cands}
	switch len(sim.Replacements) {
	case 0:
		cmd.Decision, cmd.Savings = DecisionDelete, price
		return cmd, "", "", nil
	case 1:
		r := sim.Replacements[0]
		narrowed, why, msg := cheaperReplacement(r, cands, price, d.snap.Cluster.InstanceTypes[r.NodePool], d.opts.SpotToSpotConsolidation)
		if narrowed == nil {
			return nil, why, msg, nil
		}
		cmd.Decision, cmd.Replacements, cmd.Savings = DecisionReplace, []*scheduling.NodeClaimPlan{narrowed}, price-narrowed.Price
		return cmd, "", "", nil
	default:
		return nil, StayNoCheaper, fmt.Sprintf("its pods would need %d new nodes", len(sim.Replacements)), nil
	}
}

// multiNode looks for the longest prefix (of at least two candidates, cheapest to disrupt first) that can be
// deleted or replaced by one cheaper node, by binary search.
func (d *decider) multiNode(ctx context.Context, open []*Candidate) (*Command, error) {
	cands := d.take(d.underutilized(open), karpv1.DisruptionReasonUnderutilized, d.opts.MaxMultiNodeCandidates)
	if len(cands) < 2 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.MultiNodeTimeout)
	defer cancel()
	var best *Command
	lo, hi := 2, len(cands)
	for lo <= hi {
		if ctx.Err() != nil {
			d.result.TimedOut = append(d.result.TimedOut, ConsolidationMulti)
			break
		}
		mid := (lo + hi) / 2
		cmd, _, _, err := d.consolidate(ctx, cands[:mid], ConsolidationMulti)
		if err != nil {
			if ctx.Err() != nil {
				d.result.TimedOut = append(d.result.TimedOut, ConsolidationMulti)
				break
			}
			return nil, err
		}
		if cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// singleNode deletes or replaces the first candidate, cheapest to disrupt first, that can go.
func (d *decider) singleNode(ctx context.Context, open []*Candidate) (*Command, error) {
	cands := d.take(d.underutilized(open), karpv1.DisruptionReasonUnderutilized, len(open))
	ctx, cancel := context.WithTimeout(ctx, d.opts.SingleNodeTimeout)
	defer cancel()
	for _, c := range cands {
		if ctx.Err() != nil {
			d.result.TimedOut = append(d.result.TimedOut, ConsolidationSingle)
			return nil, nil
		}
		cmd, why, msg, err := d.consolidate(ctx, []*Candidate{c}, ConsolidationSingle)
		if err != nil {
			if ctx.Err() != nil {
				d.result.TimedOut = append(d.result.TimedOut, ConsolidationSingle)
				return nil, nil
			}
			return nil, err
		}
		if cmd != nil {
			return cmd, nil
		}
		d.stayf(c, why, "%s", msg)
	}
	return nil, nil
}
