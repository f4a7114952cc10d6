package disruption

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// ConsolidationWhole is the consolidation type of the whole-cluster method's commands.
const ConsolidationWhole = "whole-cluster"

// Limits of the whole-cluster search.
const (
	// wholeBatch is how many candidates one simulation tries to remove together; a batch that does not work is
	// halved until single candidates are left.
	wholeBatch = 64
	// wholeMinGain is the share of the candidates' price the cheapest plan must save before the method moves any
	// pod: below it the cluster is already as cheap as the scheduler can make it, and moving pods is churn.
	wholeMinGain = 0.02
	// wholeMinReplaceGain is the share of a batch's price a replace must save: replacing many nodes by almost as
	// many slightly cheaper ones evicts every pod for little, and does not bring the cluster nearer its target.
	wholeMinReplaceGain = 0.2
	// wholeMaxSimulations caps the simulations of one pass (a pass whose batches keep failing stops here).
	wholeMaxSimulations = 40
)

// WholeClusterPlan is what the whole-cluster method found in one pass: the cheapest plan the provisioning scheduler
// finds for every pod of the consolidatable nodes (with the nodes it cannot touch as options), its lower bound as a
// yardstick, and the commands that move the cluster toward it, in order. Each command is safe on its own once the
// ones before it are done: it was simulated against the cluster as those commands leave it.
type WholeClusterPlan struct {
	// ID names the plan; every command of the plan carries it in Command.Plan.
	ID string
	// Candidates counts the consolidatable nodes the plan looked at, CurrentCost is their price ($/h).
	Candidates  int
	CurrentCost float64
	// TargetCost is the price of the new nodes of the cheapest plan found for their pods (pods it places on the
	// other nodes cost nothing more); LowerBound is the scheduler's lower bound for those new nodes.
	TargetCost float64
	LowerBound float64
	// Commands are the moves toward the target, in the order they were verified.
	Commands []*Command
	// Savings is the hourly price the commands save together.
	Savings float64
	// Simulations counts the scheduler runs the search made; Failed counts its batches that did not work, by why.
	Simulations int
	Failed      map[StayReason]int
	// Settled says the candidates already cost within wholeMinGain of the target: no method moves pods for
	// underutilization this pass (multi- and single-node consolidation would only churn, one simulation per
	// candidate).
	Settled bool
}

// wholeCluster runs the whole-cluster search when the options ask for it; its commands join the pass's
// (Result.Commands) and its plan is Result.WholeCluster.
func (d *decider) wholeCluster(ctx context.Context, open []*Candidate) error {
	if !d.opts.WholeCluster {
		return nil
	}
	return d.planWholeCluster(ctx, open)
}

// unlessSettled skips a consolidation method when the whole-cluster search found the cluster settled.
func (d *decider) unlessSettled(m func(context.Context, []*Candidate) error) func(context.Context, []*Candidate) error {
	return func(ctx context.Context, open []*Candidate) error {
		if wc := d.result.WholeCluster; wc != nil && wc.Settled {
			for _, c := range d.underutilized(open) {
				d.examined[c.NodeClaim] = true
				// The message names no cluster-wide figure: it is the node's Unconsolidatable event, repeated only
				// when it changes, and a total that moves with every other node made each pass announce it anew on
				// every node (two events a node a pass while nodes came and went).
				d.stayf(c, StayNoCheaper, "the cheapest plan found for the pods of the consolidatable nodes saves less than %.0f%%",
					wholeMinGain*100)
			}
			return nil
		}
		return m(ctx, open)
	}
}

// planWholeCluster plans the whole cluster: the cheapest plan for the pods of every consolidatable node, then,
// candidates in order of savings per disrupted pod, batches of candidates removed by simulation against the cluster
// as the commands already chosen leave it (the pass's working cluster), within the NodePools' budgets, the
// PodDisruptionBudgets' allowances and Balanced scores.
func (d *decider) planWholeCluster(ctx context.Context, open []*Candidate) error {
	cands := d.underutilized(open)
	if len(cands) == 0 || len(cands) < d.opts.WholeClusterMinCandidates {
		return nil
	}
	plan := &WholeClusterPlan{Candidates: len(cands)}
	d.result.WholeCluster = plan
	movable := map[string]bool{}
	var pods []*corev1.Pod
	for _, c := range cands {
		movable[c.Node] = true
		plan.CurrentCost += c.Price
		for _, p := range c.reschedulablePods() {
			moved := scheduling.Rescheduled(p)
			pods = append(pods, moved)
		}
	}
	cluster := *d.work.cluster
	cluster.Nodes = make([]*scheduling.StateNode, 0, len(d.work.cluster.Nodes))
	for _, n := range d.work.cluster.Nodes {
		if !movable[n.Name] {
			cluster.Nodes = append(cluster.Nodes, n)
		}
	}
	cluster.Pods = pods
	opts := d.opts.Scheduling
	if opts.Bound == "" || opts.Bound == scheduling.BoundNone {
		opts.Bound = scheduling.BoundPattern
	}
	target, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return fmt.Errorf("planning the whole cluster: %w", err)
	}
	plan.Simulations++
	plan.TargetCost, plan.LowerBound = target.Cost, target.LowerBound
	if len(target.Unschedulable) == 0 && plan.TargetCost >= plan.CurrentCost*(1-wholeMinGain) {
		plan.Settled = true // nothing worth moving pods for
		return nil
	}
	plan.ID = planID(d.snap.Now, cands)

	ordered := append([]*Candidate(nil), cands...) // cands are in the pass's order; stable keeps it for ties
	sort.SliceStable(ordered, func(i, j int) bool { return perPod(ordered[i]) > perPod(ordered[j]) })
	next := 0
	var work [][]*Candidate
	defer func() {
		// candidates the search did not get to go first next pass
		for _, b := range work {
			for _, c := range b {
				d.unexamined[c.NodeClaim] = true
			}
		}
		for _, c := range ordered[next:] {
			if d.allowed[c.NodePool][karpv1.DisruptionReasonUnderutilized] > 0 {
				d.unexamined[c.NodeClaim] = true
			}
		}
	}()
	for {
		if len(work) == 0 {
			var batch []*Candidate
			for next < len(ordered) && len(batch) < wholeBatch {
				batch = append(batch, ordered[next])
				next++
			}
			if len(batch) == 0 {
				return nil
			}
			work = append(work, batch)
		}
		if ctx.Err() != nil || plan.Simulations >= wholeMaxSimulations {
			d.timedOut(ConsolidationWhole)
			return nil
		}
		batch := d.admit(work[0])
		work = work[1:]
		if len(batch) == 0 {
			if !anyBudget(d.allowed) {
				return nil
			}
			continue
		}
		if c, why := d.pdbExceeded(batch); why != "" {
			if len(batch) == 1 {
				d.examined[c.NodeClaim] = true
				d.stayf(c, StayPDB, "%s", why)
				continue
			}
			work = append([][]*Candidate{batch[:len(batch)/2], batch[len(batch)/2:]}, work...)
			continue
		}
		cmd, sim, why, msg, err := d.wholeMove(ctx, plan, batch)
		if err != nil {
			if ctx.Err() != nil {
				d.timedOut(ConsolidationWhole)
				work = append([][]*Candidate{batch}, work...)
				return nil
			}
			return err
		}
		if cmd == nil {
			if plan.Failed == nil {
				plan.Failed = map[StayReason]int{}
			}
			plan.Failed[why]++
			if len(batch) == 1 {
				d.examined[batch[0].NodeClaim] = true
				d.stayf(batch[0], why, "%s", msg)
				continue
			}
			if sim != nil && sim.plan != nil && len(sim.plan.Unschedulable) > 0 {
				// the candidates holding the pods that fit nowhere stay; the others are tried again without them
				stuck := map[string]string{}
				for _, u := range sim.plan.Unschedulable {
					stuck[u.Pod.String()] = u.Reason
				}
				var rest []*Candidate
				for _, c := range batch {
					if p := holds(c, stuck); p != "" {
						d.examined[c.NodeClaim] = true
						d.stayf(c, StayPodsDoNotFit, "pod %s would not fit anywhere else: %s", p, stuck[p])
						continue
					}
					rest = append(rest, c)
				}
				if len(rest) < len(batch) {
					if len(rest) > 0 {
						work = append([][]*Candidate{rest}, work...)
					}
					continue
				}
			}
			if why == StayNoCheaper && sim != nil && len(sim.Replacements) > 0 {
				// the candidates whose pods all found room on the other nodes are tried again on their own (a
				// delete, most likely); those whose pods needed the new nodes go to the back of the queue
				rest, overflow := splitOverflow(batch, sim.Replacements)
				if len(rest) > 0 && len(overflow) > 0 {
					work = append(append([][]*Candidate{rest}, work...), overflow)
					continue
				}
			}
			work = append([][]*Candidate{batch[:len(batch)/2], batch[len(batch)/2:]}, work...)
			continue
		}
		cmd.Plan = plan.ID
		d.accept(cmd, sim)
		plan.Commands = append(plan.Commands, cmd)
		plan.Savings += cmd.Savings
		if !anyBudget(d.allowed) {
			return nil
		}
	}
}

// wholeMove simulates removing a batch on the working cluster and returns the command when every pod is placed and
// it saves money, with the simulation to accept it with; otherwise why not (and the failing simulation, whose
// unschedulable pods say which candidates to drop). A batch whose pods all fit on the other nodes is a delete;
// one that needs new nodes is a replace when those cost less than the batch, each narrowed to options that keep
// the saving. The replacements are then placed as nodes the scheduler fills one pod at a time, as the
// kube-scheduler will, not only as the packing that chose them: a few rounds add the new nodes that placement
// still asks for while the batch saves money, and the placements kept are the last round's.
func (d *decider) wholeMove(ctx context.Context, plan *WholeClusterPlan, batch []*Candidate) (*Command, *simulation, StayReason, string, error) {
	for _, c := range batch {
		d.examined[c.NodeClaim] = true
	}
	sim, err := simulate(ctx, d.work.cluster, batch, d.opts.Scheduling)
	if err != nil {
		return nil, nil, "", "", err
	}
	plan.Simulations++
	if sim.Unschedulable != "" {
		return nil, sim, StayPodsDoNotFit, sim.Unschedulable, nil
	}
	price := totalPrice(batch)
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: ConsolidationWhole, Candidates: batch}
	if len(sim.Replacements) == 0 {
		cmd.Decision, cmd.Savings, cmd.Placements = DecisionDelete, price, sim.placements()
		return d.scored(cmd, sim)
	}
	cmd.Decision = DecisionReplace
	cmd, why, msg := d.topUp(batch, cmd, sim.Replacements)
	if cmd == nil {
		return nil, sim, why, msg, nil // its new nodes say which candidates' pods did not fit on the others
	}
	for round := 0; cmd != nil; round++ {
		extra := make([]*scheduling.StateNode, 0, len(cmd.Replacements))
		for k, r := range cmd.Replacements {
			n := PlannedNode(d.work.cluster, r, fmt.Sprintf("whole-cluster-check-%d", k), nil)
			n.InFlight = true
			extra = append(extra, n)
		}
		cluster := *d.work.cluster
		cluster.Nodes = append(append(make([]*scheduling.StateNode, 0, len(cluster.Nodes)+len(extra)), cluster.Nodes...), extra...)
		check, err := simulate(ctx, &cluster, batch, d.opts.Scheduling)
		if err != nil {
			return nil, nil, "", "", err
		}
		plan.Simulations++
		if check.Unschedulable != "" {
			return nil, check, StayPodsDoNotFit, check.Unschedulable, nil
		}
		if len(check.Replacements) == 0 {
			sim := onReplacements(cmd, check, extra)
			if d.pruned(cmd) {
				return nil, nil, StayNoCheaper, "each node's replacement would cost as much as the node: the move saves nothing", nil
			}
			kept, keptSim, err := d.wholeKeep(ctx, plan, cmd)
			if err != nil {
				return nil, nil, "", "", err
			}
			if kept != nil {
				return kept, keptSim, "", "", nil
			}
			return d.scored(cmd, sim)
		}
		if round == 2 {
			return nil, nil, StayPodsDoNotFit, fmt.Sprintf("its pods fit on the %d replacement(s) only as packed together, not one at a time", len(cmd.Replacements)), nil
		}
		cmd, why, msg = d.topUp(batch, cmd, check.Replacements)
	}
	return nil, nil, why, msg, nil
}

// wholeKeepTries bounds the candidates wholeKeep tries keeping for one replace command.
const wholeKeepTries = 2

// wholeKeep looks, in a replace command, for a candidate whose own instance type is among a replacement's options
// at no more than that replacement costs: launching it would put the candidate's capacity back at the same price
// or dearer, after evicting the candidate's pods. That candidate stays and the others are removed without it
// (wholeMove on them, so it may take their pods); the result replaces cmd when it saves at least as much with
// fewer launches. As a multi-node command keeps such a candidate (keepOne), the whole-cluster one does too: each
// of its launches is a node billed from zero and a second move for the pods put on it.
func (d *decider) wholeKeep(ctx context.Context, plan *WholeClusterPlan, cmd *Command) (*Command, *simulation, error) {
	tried := 0
	for _, r := range cmd.Replacements {
		limit, keep := sameTypeLimit(r, cmd.Candidates)
		if keep == nil || r.Price < limit-1e-9 {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(cmd.Candidates), func(c *Candidate) bool { return c == keep })
		if len(others) == 0 {
			continue
		}
		alt, altSim, _, _, err := d.wholeMove(ctx, plan, others)
		if err != nil {
			return nil, nil, err
		}
		if alt != nil && alt.Savings >= cmd.Savings-1e-9 && len(alt.Replacements) < len(cmd.Replacements) {
			d.stayf(keep, StayReceiving, "the whole-cluster plan removes the other nodes of its batch and keeps it: a %s in its place would cost $%.4f/h, no less than it does ($%.4f/h)",
				r.InstanceType, r.Price, keep.Price)
			return alt, altSim, nil
		}
		if tried++; tried == wholeKeepTries {
			break
		}
	}
	return nil, nil, nil
}

// scored applies the fresh-replacement margin and the Balanced policy of the candidates' NodePools to a command.
func (d *decider) scored(cmd *Command, sim *simulation) (*Command, *simulation, StayReason, string, error) {
	if why := clearsFreshMargin(cmd, d.snap.Now); why != "" {
		return nil, nil, StayFreshReplacement, why, nil
	}
	scores, ok := ScoreCommand(cmd.Candidates, cmd.Savings, d.snap.NodePools, d.totals, BalancedK)
	d.result.Scored = append(d.result.Scored, scores...)
	if !ok {
		return nil, nil, StayScore, balancedRejection(cmd, scores), nil
	}
	cmd.Scores = scores
	return cmd, sim, "", "", nil
}

// onReplacements turns the check that placed a replace command's pods on its replacements (as the nodes extra)
// into the simulation the pass accepts: placements on existing nodes stay placements, those on a replacement
// become its pods.
func onReplacements(cmd *Command, check *simulation, extra []*scheduling.StateNode) *simulation {
	index := map[string]int{}
	for k, n := range extra {
		index[n.Name] = k
	}
	for _, r := range cmd.Replacements {
		r.Pods = nil
	}
	out := &simulation{plan: &scheduling.Plan{}, pods: check.pods}
	for _, pl := range check.placements() {
		if k, ok := index[pl.Node]; ok {
			cmd.Replacements[k].Pods = append(cmd.Replacements[k].Pods, pl.Pod)
			continue
		}
		out.plan.Placements = append(out.plan.Placements, pl)
	}
	cmd.Placements = out.plan.Placements
	return out
}

// topUp adds to a replace command the new nodes extra that placing its pods still needs, each narrowed to options
// that keep the batch cheaper than before, or says why the batch does not save money.
func (d *decider) topUp(batch []*Candidate, cmd *Command, extra []*scheduling.NodeClaimPlan) (*Command, StayReason, string) {
	price := totalPrice(batch)
	total := replacementPrice(cmd.Replacements)
	for _, r := range extra {
		total += r.Price
	}
	slack := price - total
	if slack < price*wholeMinReplaceGain {
		return nil, StayNoCheaper, fmt.Sprintf("its pods would need %d new node(s) costing $%.4f/h, not %.0f%% less than its $%.4f/h",
			len(cmd.Replacements)+len(extra), total, wholeMinReplaceGain*100, price)
	}
	for _, r := range extra {
		narrowed, why, msg := cheaperReplacement(r, batch, r.Price+slack/float64(len(extra)), d.snap.Cluster.InstanceTypes[r.NodePool], d.opts.SpotToSpotConsolidation)
		if narrowed == nil {
			return nil, why, msg
		}
		cmd.Replacements = append(cmd.Replacements, narrowed)
	}
	cmd.Savings = price - replacementPrice(cmd.Replacements)
	return cmd, "", ""
}

// perPod is what deleting the candidate saves per pod it evicts.
func perPod(c *Candidate) float64 {
	return c.Price / float64(max(1, len(c.reschedulablePods())))
}

// planID names a pass's plan: stable for a snapshot (its time and the candidates it looked at).
func planID(now time.Time, cands []*Candidate) string {
	names := make([]string, 0, len(cands))
	for _, c := range cands {
		names = append(names, c.NodeClaim)
	}
	sort.Strings(names)
	h := fnv.New32a()
	fmt.Fprint(h, now.UTC().Format(time.RFC3339))
	for _, n := range names {
		fmt.Fprint(h, "/", n)
	}
	return fmt.Sprintf("plan-%s-%08x", now.UTC().Format("150405"), h.Sum32())
}

func anyBudget(allowed map[string]map[karpv1.DisruptionReason]int) bool {
	for _, a := range allowed {
		if a[karpv1.DisruptionReasonUnderutilized] > 0 {
			return true
		}
	}
	return false
}

// admit drops from a batch the candidates already in a command, those an earlier command moves pods onto, those a
// Balanced NodePool would not let go even for free, and those beyond their NodePool's budget.
func (d *decider) admit(batch []*Candidate) []*Candidate {
	var out []*Candidate
	used := map[string]int{}
	for _, c := range batch {
		if d.taken[c.NodeClaim] || d.receiving(c) || d.deleteScoreTooLow(c) {
			continue
		}
		if d.allowed[c.NodePool][karpv1.DisruptionReasonUnderutilized]-used[c.NodePool] <= 0 {
			d.stayf(c, StayBudget, "the disruption budgets of nodepool %s allow no more %s disruptions now", c.NodePool, karpv1.DisruptionReasonUnderutilized)
			continue
		}
		used[c.NodePool]++
		out = append(out, c)
	}
	return out
}

// pdbExceeded names a PodDisruptionBudget the batch's evictions would exceed, given what the earlier commands of
// the pass use, with a candidate holding one of its pods; "" when none.
func (d *decider) pdbExceeded(batch []*Candidate) (*Candidate, string) {
	use := map[*policyv1.PodDisruptionBudget]int{}
	holder := map[*policyv1.PodDisruptionBudget]*Candidate{}
	for _, c := range batch {
		for _, p := range c.reschedulablePods() {
			for _, pdb := range selectingPDBs(p, d.snap.PodDisruptionBudgets) {
				use[pdb]++
				if holder[pdb] == nil {
					holder[pdb] = c
				}
			}
		}
	}
	for _, pdb := range d.snap.PodDisruptionBudgets {
		left := int(pdb.Status.DisruptionsAllowed) - d.pdbUsed[pdb]
		if n := use[pdb]; n > left {
			return holder[pdb], fmt.Sprintf("its pods would take %d disruptions of PodDisruptionBudget %s/%s, which has %d left in this pass",
				n, pdb.Namespace, pdb.Name, max(0, left))
		}
	}
	return nil, ""
}

// splitOverflow splits a batch into the candidates none of whose pods the simulation put on a new node and the
// others.
func splitOverflow(batch []*Candidate, news []*scheduling.NodeClaimPlan) (rest, overflow []*Candidate) {
	onNew := map[string]bool{}
	for _, r := range news {
		for _, key := range r.Pods {
			onNew[key.String()] = true
		}
	}
	for _, c := range batch {
		over := false
		for _, p := range c.reschedulablePods() {
			if onNew[p.Namespace+"/"+p.Name] {
				over = true
				break
			}
		}
		if over {
			overflow = append(overflow, c)
		} else {
			rest = append(rest, c)
		}
	}
	return rest, overflow
}

// holds returns the first of the candidate's pods named in stuck (namespace/name), or "".
func holds(c *Candidate, stuck map[string]string) string {
	for _, p := range c.reschedulablePods() {
		if key := p.Namespace + "/" + p.Name; stuck[key] != "" {
			return key
		}
	}
	return ""
}

// PlannedNode is the node a planned NodeClaim becomes with its cheapest option, named name, with pods bound to it.
func PlannedNode(cluster *scheduling.Snapshot, nc *scheduling.NodeClaimPlan, name string, pods []*corev1.Pod) *scheduling.StateNode {
	var it *cloudprovider.InstanceType
	for _, t := range cluster.InstanceTypes[nc.NodePool] {
		if t.Name == nc.InstanceType {
			it = t
		}
	}
	nodeLabels := map[string]string{}
	alloc := corev1.ResourceList{}
	if it != nil {
		for k, v := range it.Labels {
			nodeLabels[k] = v
		}
		over := it.Overhead.Total()
		for res, q := range it.Capacity {
			a := q.DeepCopy()
			if o, ok := over[res]; ok {
				a.Sub(o)
			}
			alloc[res] = a
		}
	}
	for _, np := range cluster.NodePools {
		if np.Name == nc.NodePool {
			for k, v := range np.Labels {
				nodeLabels[k] = v
			}
		}
	}
	for k, v := range nc.Labels {
		nodeLabels[k] = v
	}
	nodeLabels[corev1.LabelInstanceTypeStable] = nc.InstanceType
	nodeLabels[corev1.LabelTopologyZone] = nc.Zone
	nodeLabels[karpv1.CapacityTypeLabelKey] = nc.CapacityType
	nodeLabels[karpv1.NodePoolLabelKey] = nc.NodePool
	nodeLabels[corev1.LabelHostname] = name
	bound := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		p = p.DeepCopy()
		p.Spec.NodeName = name
		p.Status.Phase = corev1.PodRunning
		bound = append(bound, p)
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].Name < bound[j].Name })
	return &scheduling.StateNode{Name: name, Labels: nodeLabels, Taints: nc.Taints, Allocatable: alloc, Pods: bound, NodePool: nc.NodePool}
}
