package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"

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
	busy string
	// allowed is what budgets still allow, per NodePool and reason, after the commands decided so far.
	allowed map[string]map[karpv1.DisruptionReason]int
	stays   map[string]Stay
	result  *Result
	// work is the cluster as the commands decided so far leave it; taken are their candidates' NodeClaims.
	work  *working
	taken map[string]bool
	// examined are the candidates the pass reached a verdict on; unexamined those a search left out (time, cap),
	// which go first next pass even when another method reached them.
	examined   map[string]bool
	unexamined map[string]bool
	// totals are the NodePools' totals for Balanced scores, from the input snapshot.
	totals map[string]PoolTotals
	// pdbUsed counts, per PodDisruptionBudget, the evictions the commands decided so far make under it.
	pdbUsed map[*policyv1.PodDisruptionBudget]int
}

// Decide runs the methods in order (node repair, drift, emptiness, multi-node then single-node consolidation) and returns
// every command they find within budgets (Result.Commands, candidates disjoint, each simulated on the cluster as
// the earlier ones leave it), with why every other candidate stays. It is deterministic for a given snapshot,
// except that a consolidation search cut short by its timeout keeps the commands found so far.
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
	if opts.Scheduling.Memo == nil {
		// The pass's simulations share their NodePools, instance types and DaemonSets, and most nodes and pods.
		opts.Scheduling.Memo = scheduling.NewMemo()
	}
	d := &decider{snap: snap, opts: opts, stays: map[string]Stay{}, allowed: map[string]map[karpv1.DisruptionReason]int{},
		result: &Result{Eligible: map[karpv1.DisruptionReason]int{}, Allowed: map[string]map[karpv1.DisruptionReason]int{}},
		work:   newWorking(snap.Cluster), taken: map[string]bool{}, examined: map[string]bool{}, unexamined: map[string]bool{},
		pdbUsed: map[*policyv1.PodDisruptionBudget]int{}, totals: Totals(snap.Candidates)}
	if err := d.budgets(); err != nil {
		return nil, err
	}
	if _, err := d.work.reserve(ctx, snap.Leaving, opts.Scheduling); err != nil {
		return nil, err
	}
	if len(snap.Queued) > 0 {
		drifted := map[string]bool{}
		for _, c := range snap.Candidates {
			if c.Drifted != "" {
				drifted[c.Node] = true
			}
		}
		if _, err := d.work.hold(ctx, snap.Queued, drifted, opts.Scheduling); err != nil {
			return nil, err
		}
	}
	// Node repair comes first, and takes nodes the other methods leave alone (see repair).
	if err := d.repair(ctx, sortedCandidates(snap.Candidates)); err != nil {
		return nil, err
	}
	var open []*Candidate
	for _, c := range sortedCandidates(snap.Candidates) {
		if d.taken[c.NodeClaim] {
			continue
		}
		if s := blocker(c, snap.NodePools, snap.PodDisruptionBudgets, snap.Now); s != nil {
			d.stay(*s)
			d.examined[c.NodeClaim] = true
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
	methods := []func(context.Context, []*Candidate) error{d.drift, d.emptiness, d.wholeCluster, d.unlessSettled(d.multiNode), d.unlessSettled(d.singleNode)}
	for _, m := range methods {
		if err := m(ctx, d.free(open)); err != nil {
			return nil, err
		}
	}
	if len(d.result.Commands) > 0 {
		d.result.Command = d.result.Commands[0]
	}
	d.finish(open)
	return d.result, nil
}

// free returns the candidates in no command yet.
func (d *decider) free(cs []*Candidate) []*Candidate {
	out := make([]*Candidate, 0, len(cs))
	for _, c := range cs {
		if !d.taken[c.NodeClaim] {
			out = append(out, c)
		}
	}
	return out
}

// pdbSpent records a stay for a candidate with a pod whose PodDisruptionBudget's allowance the earlier commands
// of the pass use up, and reports it: two commands started together must not count on the same allowance.
func (d *decider) pdbSpent(c *Candidate) bool {
	if len(d.pdbUsed) == 0 {
		return false
	}
	for _, p := range c.reschedulablePods() {
		for _, pdb := range selectingPDBs(p, d.snap.PodDisruptionBudgets) {
			if used := d.pdbUsed[pdb]; used > 0 && int32(used) >= pdb.Status.DisruptionsAllowed {
				d.stayf(c, StayPDB, "pod %s/%s is covered by PodDisruptionBudget %s/%s, whose %d allowed disruption(s) earlier commands of this pass use",
					p.Namespace, p.Name, pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed)
				return true
			}
		}
	}
	return false
}

// receiving records a stay for a candidate an earlier command of the pass moves pods onto, or that the pods of
// nodes being drained are expected to move onto (Snapshot.Leaving), and reports it.
func (d *decider) receiving(c *Candidate) bool {
	msg, ok := d.work.receiving[c.Node]
	switch {
	case ok && msg == "":
		d.stayf(c, StayReceiving, "pods of nodes being drained are expected to move onto it; it is looked at again next pass")
	case ok:
		d.stayf(c, StayReceiving, "an earlier command of this pass moves pods onto it (%s); it is looked at again next pass", msg)
	}
	return ok
}

// accept adds a command to the result: its candidates are taken, its nodes consume their NodePools' allowance
// for every reason (budgets count disrupting nodes whatever the reason), and the working cluster moves on.
func (d *decider) accept(cmd *Command, sim *simulation) {
	cmd.Evictions = evictions(cmd.Candidates)
	per := map[string]int{}
	for _, c := range cmd.Candidates {
		d.taken[c.NodeClaim] = true
		d.examined[c.NodeClaim] = true
		per[c.NodePool]++
	}
	for _, c := range cmd.Candidates {
		for _, p := range c.reschedulablePods() {
			for _, pdb := range selectingPDBs(p, d.snap.PodDisruptionBudgets) {
				d.pdbUsed[pdb]++
			}
		}
	}
	for pool, k := range per {
		for r, n := range d.allowed[pool] {
			d.allowed[pool][r] = max(0, n-k)
		}
	}
	d.work.apply(cmd, sim)
	d.result.Commands = append(d.result.Commands, cmd)
	d.result.Evictions += cmd.Evictions
	if cmd.Reason != karpv1.DisruptionReasonDrifted && cmd.Reason != karpv1.DisruptionReasonUnhealthy {
		d.result.SavingsPerHour += cmd.Savings
	}
}

func (d *decider) timedOut(kind string) {
	if !slices.Contains(d.result.TimedOut, kind) {
		d.result.TimedOut = append(d.result.TimedOut, kind)
	}
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
		// Node repair's reason is counted apart: the budgets' other reasons (and their metrics) stay as they are.
		repairs, err := AllowedRepairs(d.snap.NodePools[name], d.snap.Now, d.snap.NodeCounts[name], d.snap.Disrupting[name])
		if err != nil {
			return fmt.Errorf("computing disruption budgets: %w", err)
		}
		a[karpv1.DisruptionReasonUnhealthy] = repairs
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

// finish fills Stays for every candidate in no command, sorted by NodeClaim, and Examined.
func (d *decider) finish(open []*Candidate) {
	for _, c := range open {
		if d.taken[c.NodeClaim] {
			continue
		}
		if d.unexamined[c.NodeClaim] || !d.examined[c.NodeClaim] {
			d.stayf(c, StayNotExamined, "the pass ran out of search time or reached its candidate cap before it got to this node; it goes first next pass")
		}
		d.stayf(c, StayNoCheaper, "no disruption method applies: it is not drifted, not empty, and consolidating it would not save money")
	}
	for name, s := range d.stays {
		if !d.taken[name] {
			d.result.Stays = append(d.result.Stays, s)
		}
	}
	sort.Slice(d.result.Stays, func(i, j int) bool { return d.result.Stays[i].NodeClaim < d.result.Stays[j].NodeClaim })
	d.result.Examined = map[string]time.Time{}
	for _, c := range d.snap.Candidates {
		if t, ok := d.snap.Examined[c.NodeClaim]; ok {
			d.result.Examined[c.NodeClaim] = t
		}
		if d.examined[c.NodeClaim] && !d.unexamined[c.NodeClaim] {
			d.result.Examined[c.NodeClaim] = d.snap.Now
		}
	}
}

// take returns, in order and up to limit, the candidates whose NodePool's budget for reason has room for them
// all (without consuming it: accept does); those without room get a Budget stay, those an earlier command moves
// pods onto a Receiving stay.
func (d *decider) take(cands []*Candidate, reason karpv1.DisruptionReason, limit int) []*Candidate {
	left := map[string]int{}
	var out []*Candidate
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		if d.taken[c.NodeClaim] || d.receiving(c) || d.pdbSpent(c) {
			continue
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

// room reports whether c's NodePool's budget for reason allows one more node now, recording a Budget stay when
// not.
func (d *decider) room(c *Candidate, reason karpv1.DisruptionReason) bool {
	if d.allowed[c.NodePool][reason] > 0 {
		return true
	}
	d.stayf(c, StayBudget, "the disruption budgets of nodepool %s allow no more %s disruptions now", c.NodePool, reason)
	return false
}

// drift deletes all drifted empty nodes in one command, then replaces drifted nodes one per command, as budgets
// allow. A drifted node's pods go to nodes that are not drifted or to replacements, onto other drifted nodes only
// when there is no other way.
func (d *decider) drift(ctx context.Context, open []*Candidate) error {
	var drifted, empty []*Candidate
	for _, c := range open {
		if c.Drifted == "" {
			continue
		}
		if len(c.reschedulablePods()) == 0 {
			empty = append(empty, c)
		} else {
			drifted = append(drifted, c)
		}
	}
	d.result.Eligible[karpv1.DisruptionReasonDrifted] = len(drifted) + len(empty)
	if cs := d.take(empty, karpv1.DisruptionReasonDrifted, len(empty)); len(cs) > 0 {
		d.accept(&Command{Reason: karpv1.DisruptionReasonDrifted, Decision: DecisionDelete, Candidates: cs, Savings: totalPrice(cs)}, nil)
	}
	sortByCost(drifted, d.opts.PodDeletionCostManagement)
	decided := 0
	for i, c := range drifted {
		if d.opts.MaxDriftCommands > 0 && decided == d.opts.MaxDriftCommands {
			for _, o := range drifted[i:] {
				if !d.taken[o.NodeClaim] {
					d.unexamined[o.NodeClaim] = true
					d.stayf(o, StayNotExamined, "drifted (%s); this pass decided its %d drift commands before it got to this node: left for the next pass",
						o.Drifted, d.opts.MaxDriftCommands)
				}
			}
			return nil
		}
		if d.receiving(c) || d.pdbSpent(c) || !d.room(c, karpv1.DisruptionReasonDrifted) {
			continue
		}
		// Pods moved onto another drifted node would move again.
		sim, err := d.simulateAway(ctx, c, drifted)
		if err != nil {
			return err
		}
		d.examined[c.NodeClaim] = true
		if sim.Unschedulable != "" {
			done, err := d.terminateFirstReserved(ctx, c, karpv1.DisruptionReasonDrifted, d.opts.TerminateFirstDrift)
			if err != nil {
				return err
			}
			if done {
				decided++
				continue
			}
			d.stayf(c, StayPodsDoNotFit, "drifted (%s), but it cannot be replaced: %s", c.Drifted, sim.Unschedulable)
			continue
		}
		cmd := &Command{Reason: karpv1.DisruptionReasonDrifted, Decision: DecisionDelete, Candidates: []*Candidate{c}, Replacements: sim.Replacements}
		cmd.Placements = sim.placements()
		if len(sim.Replacements) > 0 {
			cmd.Decision = DecisionReplace
		}
		cmd.Savings = c.Price - replacementPrice(sim.Replacements)
		d.accept(cmd, sim)
		decided++
	}
	return nil
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
			d.examined[c.NodeClaim] = true
			continue
		}
		if !c.Consolidatable {
			d.stayf(c, StayNotConsolidatable, "pods were scheduled or removed less than consolidateAfter (%s) ago", np.Spec.Disruption.ConsolidateAfter)
			d.examined[c.NodeClaim] = true
			continue
		}
		if underutilized && np.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty {
			d.stayf(c, StayPolicy, "it has pods, and nodepool %s consolidates only empty nodes (consolidationPolicy: WhenEmpty)", c.NodePool)
			d.examined[c.NodeClaim] = true
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

// emptiness deletes every consolidatable node without reschedulable pods, as budgets allow, in one command.
func (d *decider) emptiness(_ context.Context, open []*Candidate) error {
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
		return nil
	}
	d.accept(&Command{Reason: karpv1.DisruptionReasonEmpty, ConsolidationType: ConsolidationEmpty, Decision: DecisionDelete,
		Candidates: cs, Savings: totalPrice(cs)}, nil)
	return nil
}

// underutilized returns the consolidatable candidates with pods: those examined longest ago (never first), then
// cheapest to disrupt first.
func (d *decider) underutilized(open []*Candidate) []*Candidate {
	var busy []*Candidate
	for _, c := range open {
		if len(c.reschedulablePods()) > 0 {
			busy = append(busy, c)
		}
	}
	out := d.consolidatable(busy, true)
	d.result.Eligible[karpv1.DisruptionReasonUnderutilized] = len(out)
	sortByCost(out, d.opts.PodDeletionCostManagement)
	sort.SliceStable(out, func(i, j int) bool {
		return d.snap.Examined[out[i].NodeClaim].Before(d.snap.Examined[out[j].NodeClaim])
	})
	return out
}

// consolidate checks, on the working cluster, whether removing cands (and launching at most one cheaper node)
// keeps every pod placed.
func (d *decider) consolidate(ctx context.Context, cands []*Candidate, kind string) (*Command, *simulation, StayReason, string, error) {
	sim, err := simulate(ctx, d.work.cluster, cands, d.opts.Scheduling)
	if err != nil {
		return nil, nil, "", "", err
	}
	if sim.Unschedulable != "" {
		return nil, nil, StayPodsDoNotFit, sim.Unschedulable, nil
	}
	price := totalPrice(cands)
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: kind, Candidates: cands, Placements: sim.placements()}
	switch len(sim.Replacements) {
	case 0:
		cmd.Decision, cmd.Savings = DecisionDelete, price
	case 1:
		r := sim.Replacements[0]
		catalog := d.snap.Cluster.InstanceTypes[r.NodePool]
		limit, keep := price, (*Candidate)(nil)
		if kind == ConsolidationMulti {
			if l, k := sameTypeLimit(r, cands); l < price {
				limit, keep = l, k // launch only a type cheaper than keep's
			}
		}
		narrowed, why, msg := cheaperReplacement(r, cands, limit, catalog, d.opts.SpotToSpotConsolidation)
		if narrowed == nil && keep != nil {
			// Every type that holds the pods costs as much as keep: keep stays and takes the others' pods when
			// they fit; only when they do not does the new node do what no candidate can.
			kept, keptSim, absorbed, err := d.keepOne(ctx, cands, keep)
			if err != nil {
				return nil, nil, "", "", err
			}
			if kept != nil {
				return d.scored(kept, keptSim)
			}
			if absorbed {
				return nil, nil, StayNoCheaper, fmt.Sprintf("%s can take the other node's pods: deleting that node saves as much without a launch", keep.NodeClaim), nil
			}
			narrowed, why, msg = cheaperReplacement(r, cands, price, catalog, d.opts.SpotToSpotConsolidation)
		}
		if narrowed == nil {
			return nil, nil, why, msg, nil
		}
		// Under Balanced, keep only the options that save enough, so that whatever the cloud launches is approved.
		if need := MinSavings(cands, d.snap.NodePools, d.totals, BalancedK); need > 0 && narrowed.Price <= price-need {
			narrowed = capOptions(narrowed, price-need, catalog)
		}
		cmd.Decision, cmd.Replacements, cmd.Savings = DecisionReplace, []*scheduling.NodeClaimPlan{narrowed}, price-narrowed.Price
		if d.pruned(cmd) {
			return nil, nil, StayNoCheaper, "each node's replacement would cost as much as the node: the move saves nothing", nil
		}
	default:
		return nil, nil, StayNoCheaper, fmt.Sprintf("its pods would need %d new nodes", len(sim.Replacements)), nil
	}
	return d.scored(cmd, sim)
}

// keepOne is the multi-node command that ends where replacing cands by one node of keep's instance type (or a
// dearer one) would: keep stays and the other candidates are deleted, their pods onto keep and the rest of the
// cluster, each moved once, with no launch and none of keep's pods evicted. absorbed says whether the others'
// pods fit without a new node; the command needs at least two others (one is single-node consolidation's).
func (d *decider) keepOne(ctx context.Context, cands []*Candidate, keep *Candidate) (cmd *Command, sim *simulation, absorbed bool, err error) {
	others := slices.DeleteFunc(slices.Clone(cands), func(c *Candidate) bool { return c == keep })
	sim, err = simulate(ctx, d.work.cluster, others, d.opts.Scheduling)
	if err != nil {
		return nil, nil, false, err
	}
	if sim.Unschedulable != "" || len(sim.Replacements) > 0 {
		return nil, nil, false, nil
	}
	if len(others) < 2 {
		return nil, nil, true, nil
	}
	return &Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: ConsolidationMulti, Candidates: others,
		Placements: sim.placements(), Decision: DecisionDelete, Savings: totalPrice(others)}, sim, true, nil
}

// pruned takes out of a replace command the candidates whose replacement saves nothing (pruneNoSaving), with a
// stay each, and reports whether none is left.
func (d *decider) pruned(cmd *Command) bool {
	for _, c := range pruneNoSaving(cmd) {
		d.examined[c.NodeClaim] = true
		d.stayf(c, StayNoCheaper, "its pods would go to a replacement costing as much as it does ($%.4f/h): replacing it saves nothing", c.Price)
	}
	return len(cmd.Candidates) == 0
}

// balancedRejection says why a Balanced NodePool rejects a move.
func balancedRejection(cmd *Command, scores []Score) string {
	var parts []string
	for _, s := range scores {
		if !s.Approved {
			parts = append(parts, s.String())
		}
	}
	verb := "deleting"
	if cmd.Decision == DecisionReplace {
		verb = "replacing"
	}
	return fmt.Sprintf("consolidationPolicy Balanced: %s it would save $%.4f/h, not worth the disruption: %s", verb, cmd.Savings, strings.Join(parts, "; "))
}

// deleteScoreTooLow reports whether even deleting c outright (the most a move can save for its disruption) would
// be rejected by its NodePool's Balanced policy, recording a stay; such a node is not simulated.
func (d *decider) deleteScoreTooLow(c *Candidate) bool {
	np := d.snap.NodePools[c.NodePool]
	if np == nil || np.Spec.Disruption.ConsolidationPolicy != PolicyBalanced {
		return false
	}
	s := ScoreMove(c.NodePool, c.Price, nodeDisruptionCost(c.Pods, d.opts.PodDeletionCostManagement), d.totals[c.NodePool], BalancedK)
	if s.Approved {
		return false
	}
	d.examined[c.NodeClaim] = true
	d.stayf(c, StayScore, "consolidationPolicy Balanced: even deleting it would not be worth the disruption: %s", s)
	return true
}

// multiNode repeatedly looks, among the first MaxMultiNodeCandidates free candidates with budget, for the
// longest prefix (of at least two) that can be deleted or replaced by one cheaper node, by binary search, and
// takes it; it stops when a search finds nothing, candidates or budgets run out, or MultiNodeTimeout (for the
// whole method) passes.
func (d *decider) multiNode(ctx context.Context, open []*Candidate) error {
	under := d.underutilized(open)
	ctx, cancel := context.WithTimeout(ctx, d.opts.MultiNodeTimeout)
	defer cancel()
	scoped := map[string]bool{}
	defer func() {
		// Candidates no completed search covered go first next pass.
		for _, c := range under {
			if !scoped[c.NodeClaim] && !d.taken[c.NodeClaim] {
				d.unexamined[c.NodeClaim] = true
			}
		}
	}()
	for {
		cands := d.take(under, karpv1.DisruptionReasonUnderutilized, d.opts.MaxMultiNodeCandidates)
		if len(cands) < 2 {
			for _, c := range cands {
				scoped[c.NodeClaim] = true
			}
			return nil
		}
		best, sim, timedOut, err := d.multiSearch(ctx, cands)
		if err != nil {
			return err
		}
		if timedOut {
			d.timedOut(ConsolidationMulti)
			if best != nil {
				d.accept(best, sim)
			}
			return nil
		}
		for _, c := range cands {
			scoped[c.NodeClaim] = true
		}
		if best == nil {
			return nil
		}
		d.accept(best, sim)
	}
}

// multiSearch binary-searches the longest workable prefix of cands; it reports whether it ran out of time.
func (d *decider) multiSearch(ctx context.Context, cands []*Candidate) (*Command, *simulation, bool, error) {
	var best *Command
	var bestSim *simulation
	lo, hi := 2, len(cands)
	for lo <= hi {
		if ctx.Err() != nil {
			return best, bestSim, true, nil
		}
		mid := (lo + hi) / 2
		cmd, sim, _, _, err := d.consolidate(ctx, cands[:mid], ConsolidationMulti)
		if err != nil {
			if ctx.Err() != nil {
				return best, bestSim, true, nil
			}
			return nil, nil, false, err
		}
		for _, c := range cands[:mid] {
			d.examined[c.NodeClaim] = true
		}
		if cmd != nil {
			best, bestSim, lo = cmd, sim, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, bestSim, false, nil
}

// singleNode deletes or replaces, one command each, every candidate (examined longest ago, then cheapest to
// disrupt first) that can go, as budgets allow, until SingleNodeTimeout (for the whole method) passes.
func (d *decider) singleNode(ctx context.Context, open []*Candidate) error {
	cands := d.underutilized(open)
	ctx, cancel := context.WithTimeout(ctx, d.opts.SingleNodeTimeout)
	defer cancel()
	for i, c := range cands {
		if d.taken[c.NodeClaim] {
			continue
		}
		if ctx.Err() != nil {
			d.timedOut(ConsolidationSingle)
			d.leftOut(cands[i:])
			return nil
		}
		if d.receiving(c) || d.pdbSpent(c) || !d.room(c, karpv1.DisruptionReasonUnderutilized) || d.deleteScoreTooLow(c) {
			continue
		}
		cmd, sim, why, msg, err := d.consolidate(ctx, []*Candidate{c}, ConsolidationSingle)
		if err != nil {
			if ctx.Err() != nil {
				d.timedOut(ConsolidationSingle)
				d.leftOut(cands[i:])
				return nil
			}
			return err
		}
		d.examined[c.NodeClaim] = true
		if cmd != nil {
			d.accept(cmd, sim)
			continue
		}
		d.stayf(c, why, "%s", msg)
	}
	return nil
}

// leftOut marks the free candidates a search did not get to.
func (d *decider) leftOut(cs []*Candidate) {
	for _, c := range cs {
		if !d.taken[c.NodeClaim] {
			d.unexamined[c.NodeClaim] = true
			d.stayf(c, StayNotExamined, "consolidation ran out of search time before it got to this node; it goes first next pass")
		}
	}
}

// simulateAway simulates moving c's pods off it with the other candidates of others not taken by a command closed
// to them (their pods would only move again), unless that leaves a pod with nowhere to go: then on the whole
// cluster.
func (d *decider) simulateAway(ctx context.Context, c *Candidate, others []*Candidate) (*simulation, error) {
	closed := map[string]bool{}
	for _, o := range others {
		if o != c && !d.taken[o.NodeClaim] {
			closed[o.Node] = true
		}
	}
	sim, err := simulate(ctx, d.work.closedTo(closed), []*Candidate{c}, d.opts.Scheduling)
	if err == nil && sim.Unschedulable != "" && len(closed) > 0 {
		sim, err = simulate(ctx, d.work.cluster, []*Candidate{c}, d.opts.Scheduling)
	}
	return sim, err
}
