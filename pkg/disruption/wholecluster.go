package disruption

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

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

// unlessSettled skips a consolidation method when the whole-cluster search found the cluster settled.
func (d *decider) unlessSettled(m func(context.Context, []*Candidate) (*Command, error)) func(context.Context, []*Candidate) (*Command, error) {
	return func(ctx context.Context, open []*Candidate) (*Command, error) {
		if wc := d.result.WholeCluster; wc != nil && wc.Settled {
			for _, c := range d.underutilized(open) {
				d.stayf(c, StayNoCheaper, "the cluster costs $%.4f/h for the consolidatable nodes, within %.0f%% of the cheapest plan found for their pods ($%.4f/h)",
					wc.CurrentCost, wholeMinGain*100, wc.TargetCost)
			}
			return nil, nil
		}
		return m(ctx, open)
	}
}

// wholeCluster runs the whole-cluster search and returns its first command (the controller carries out one
// command per pass; the plan with all of them is in Result.WholeCluster).
func (d *decider) wholeCluster(ctx context.Context, open []*Candidate) (*Command, error) {
	if !d.opts.WholeCluster {
		return nil, nil
	}
	plan, err := d.planWholeCluster(ctx, open)
	if err != nil || plan == nil {
		return nil, err
	}
	if len(plan.Commands) == 0 {
		return nil, nil
	}
	return plan.Commands[0], nil
}

// planWholeCluster plans the whole cluster: the cheapest plan for the pods of every consolidatable node, then,
// candidates in order of savings per disrupted pod, batches of candidates removed by simulation against the cluster
// as the commands already chosen leave it, within the NodePools' budgets and the PodDisruptionBudgets' allowances.
func (d *decider) planWholeCluster(ctx context.Context, open []*Candidate) (*WholeClusterPlan, error) {
	cands := d.underutilized(open)
	if len(cands) == 0 {
		return nil, nil
	}
	plan := &WholeClusterPlan{Candidates: len(cands)}
	d.result.WholeCluster = plan
	movable := map[string]bool{}
	var pods []*corev1.Pod
	for _, c := range cands {
		movable[c.Node] = true
		plan.CurrentCost += c.Price
		for _, p := range c.reschedulablePods() {
			moved := p.DeepCopy()
			moved.Spec.NodeName = ""
			pods = append(pods, moved)
		}
	}
	cluster := *d.snap.Cluster
	cluster.Nodes = make([]*scheduling.StateNode, 0, len(d.snap.Cluster.Nodes))
	for _, n := range d.snap.Cluster.Nodes {
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
		return nil, fmt.Errorf("planning the whole cluster: %w", err)
	}
	plan.Simulations++
	plan.TargetCost, plan.LowerBound = target.Cost, target.LowerBound
	if len(target.Unschedulable) == 0 && plan.TargetCost >= plan.CurrentCost*(1-wholeMinGain) {
		plan.Settled = true // nothing worth moving pods for
		return plan, nil
	}
	plan.ID = planID(d.snap.Now, cands)

	ordered := append([]*Candidate(nil), cands...) // cands are sorted by cost; stable keeps that order for ties
	sort.SliceStable(ordered, func(i, j int) bool { return perPod(ordered[i]) > perPod(ordered[j]) })
	budget := map[string]int{}
	for _, c := range ordered {
		budget[c.NodePool] = d.allowed[c.NodePool][karpv1.DisruptionReasonUnderutilized]
	}
	pdbLeft := map[*policyv1.PodDisruptionBudget]int{}
	for _, pdb := range d.snap.PodDisruptionBudgets {
		pdbLeft[pdb] = int(pdb.Status.DisruptionsAllowed)
	}
	w := newWorking(d.snap.Cluster)
	next := 0
	var work [][]*Candidate
	for {
		if len(work) == 0 {
			var batch []*Candidate
			for next < len(ordered) && len(batch) < wholeBatch {
				batch = append(batch, ordered[next])
				next++
			}
			if len(batch) == 0 {
				break
			}
			work = append(work, batch)
		}
		if ctx.Err() != nil || plan.Simulations >= wholeMaxSimulations {
			d.result.TimedOut = append(d.result.TimedOut, ConsolidationWhole)
			break
		}
		batch := work[0]
		work = work[1:]
		batch = d.admit(batch, w, budget)
		if len(batch) == 0 {
			continue
		}
		if why := pdbExceeded(batch, d.snap.PodDisruptionBudgets, pdbLeft); why != "" {
			if len(batch) == 1 {
				d.stayf(batch[0], StayPDB, "%s", why)
				continue
			}
			work = append([][]*Candidate{batch[:len(batch)/2], batch[len(batch)/2:]}, work...)
			continue
		}
		sim, err := w.simulate(ctx, batch, d.opts.Scheduling)
		if err != nil {
			if ctx.Err() != nil {
				d.result.TimedOut = append(d.result.TimedOut, ConsolidationWhole)
				break
			}
			return nil, err
		}
		plan.Simulations++
		cmd, why, msg := d.wholeCommand(batch, sim)
		// the pods must also fit with the replacements as nodes the scheduler fills one pod at a time, as the
		// kube-scheduler will, not only as the packing that chose them: a few rounds add the new nodes that
		// placement still asks for while the batch saves money; the placements kept are the last round's
		cancelled := false
		for round := 0; cmd != nil && len(cmd.Replacements) > 0; round++ {
			sim, err = w.simulate(ctx, batch, d.opts.Scheduling, replacementNodes(w.base, plan.ID, len(plan.Commands), cmd.Replacements)...)
			if err != nil {
				if ctx.Err() != nil {
					cancelled = true
					break
				}
				return nil, err
			}
			plan.Simulations++
			if sim.Unschedulable != "" {
				cmd, why, msg = nil, StayPodsDoNotFit, sim.Unschedulable
				break
			}
			if len(sim.Plan.NodeClaims) == 0 {
				break
			}
			if round == 2 {
				cmd, why, msg = nil, StayPodsDoNotFit, fmt.Sprintf("its pods fit on the %d replacement(s) only as packed together, not one at a time", len(cmd.Replacements))
				break
			}
			cmd, why, msg = d.topUp(batch, cmd, sim.Plan.NodeClaims)
		}
		if cancelled {
			d.result.TimedOut = append(d.result.TimedOut, ConsolidationWhole)
			break
		}
		if cmd == nil {
			if plan.Failed == nil {
				plan.Failed = map[StayReason]int{}
			}
			plan.Failed[why]++
			if len(batch) == 1 {
				d.stayf(batch[0], why, "%s", msg)
				continue
			}
			if len(sim.stuck) > 0 {
				// the candidates holding the pods that fit nowhere stay; the others are tried again without them
				var rest []*Candidate
				for _, c := range batch {
					if p := holds(c, sim.stuck); p != "" {
						d.stayf(c, StayPodsDoNotFit, "pod %s would not fit anywhere else: %s", p, sim.stuck[p])
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
			work = append([][]*Candidate{batch[:len(batch)/2], batch[len(batch)/2:]}, work...)
			continue
		}
		cmd.Plan = plan.ID
		for _, c := range batch {
			budget[c.NodePool]--
		}
		pdbConsume(batch, d.snap.PodDisruptionBudgets, pdbLeft)
		w.apply(batch, sim)
		plan.Commands = append(plan.Commands, cmd)
		plan.Savings += cmd.Savings
		if !anyBudget(budget) {
			break
		}
	}
	return plan, nil
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

func anyBudget(budget map[string]int) bool {
	for _, n := range budget {
		if n > 0 {
			return true
		}
	}
	return false
}

// admit drops from a batch the candidates a command of the plan already relies on (they received pods, so their
// pods changed and they are no longer consolidatable) and those beyond their NodePool's budget.
func (d *decider) admit(batch []*Candidate, w *working, budget map[string]int) []*Candidate {
	var out []*Candidate
	used := map[string]int{}
	for _, c := range batch {
		if w.receivers[c.Node] {
			d.stayf(c, StayNotConsolidatable, "it receives pods from another command of this pass")
			continue
		}
		if budget[c.NodePool]-used[c.NodePool] <= 0 {
			d.stayf(c, StayBudget, "the disruption budgets of nodepool %s allow no more %s disruptions now", c.NodePool, karpv1.DisruptionReasonUnderutilized)
			continue
		}
		used[c.NodePool]++
		out = append(out, c)
	}
	return out
}

// pdbExceeded says which PodDisruptionBudget the batch's evictions would exceed, given what earlier commands of the
// pass use, or "".
func pdbExceeded(batch []*Candidate, pdbs []*policyv1.PodDisruptionBudget, left map[*policyv1.PodDisruptionBudget]int) string {
	use := pdbUse(batch, pdbs)
	for _, pdb := range pdbs {
		if n := use[pdb]; n > left[pdb] {
			return fmt.Sprintf("its pods would take %d disruptions of PodDisruptionBudget %s/%s, which has %d left in this pass",
				n, pdb.Namespace, pdb.Name, max(0, left[pdb]))
		}
	}
	return ""
}

func pdbConsume(batch []*Candidate, pdbs []*policyv1.PodDisruptionBudget, left map[*policyv1.PodDisruptionBudget]int) {
	for pdb, n := range pdbUse(batch, pdbs) {
		left[pdb] -= n
	}
}

// pdbUse counts, per PodDisruptionBudget, the batch's pods it selects.
func pdbUse(batch []*Candidate, pdbs []*policyv1.PodDisruptionBudget) map[*policyv1.PodDisruptionBudget]int {
	out := map[*policyv1.PodDisruptionBudget]int{}
	if len(pdbs) == 0 {
		return out
	}
	for _, pdb := range pdbs {
		if pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		for _, c := range batch {
			for _, p := range c.reschedulablePods() {
				if p.Namespace == pdb.Namespace && sel.Matches(labels.Set(p.Labels)) {
					out[pdb]++
				}
			}
		}
	}
	return out
}

// wholeCommand turns a batch's simulation into a command when every pod is placed and it saves money: a delete
// when the pods fit on the other nodes, otherwise a replace whose new nodes are each narrowed to options that keep
// the batch cheaper than before.
func (d *decider) wholeCommand(batch []*Candidate, sim *placement) (*Command, StayReason, string) {
	if sim.Unschedulable != "" {
		return nil, StayPodsDoNotFit, sim.Unschedulable
	}
	price := totalPrice(batch)
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: ConsolidationWhole, Candidates: batch}
	if len(sim.Plan.NodeClaims) == 0 {
		cmd.Decision, cmd.Savings = DecisionDelete, price
		return cmd, "", ""
	}
	slack := price - sim.Plan.Cost
	if slack <= 0 {
		return nil, StayNoCheaper, fmt.Sprintf("its pods would need %d new node(s) costing $%.4f/h, not less than its $%.4f/h",
			len(sim.Plan.NodeClaims), sim.Plan.Cost, price)
	}
	cmd.Decision = DecisionReplace
	for _, r := range sim.Plan.NodeClaims {
		// each replacement may cost up to its share of the savings more than its cheapest option
		narrowed, why, msg := cheaperReplacement(r, batch, r.Price+slack/float64(len(sim.Plan.NodeClaims)),
			d.snap.Cluster.InstanceTypes[r.NodePool], d.opts.SpotToSpotConsolidation)
		if narrowed == nil {
			return nil, why, msg
		}
		cmd.Replacements = append(cmd.Replacements, narrowed)
	}
	cmd.Savings = price - replacementPrice(cmd.Replacements)
	return cmd, "", ""
}

// topUp adds to a replace command the new nodes extra that placing its pods one at a time still needs, each
// narrowed to options that keep the batch cheaper than before, or says why the batch no longer saves money.
func (d *decider) topUp(batch []*Candidate, cmd *Command, extra []*scheduling.NodeClaimPlan) (*Command, StayReason, string) {
	price := totalPrice(batch)
	total := replacementPrice(cmd.Replacements)
	for _, r := range extra {
		total += r.Price
	}
	slack := price - total
	if slack <= 0 {
		return nil, StayNoCheaper, fmt.Sprintf("its pods would need %d new node(s) costing $%.4f/h, not less than its $%.4f/h",
			len(cmd.Replacements)+len(extra), total, price)
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

// working is the cluster as the commands chosen so far leave it: their candidates gone, their pods on the nodes
// the simulations put them on, their replacements in flight.
type working struct {
	base      *scheduling.Snapshot
	nodes     []*scheduling.StateNode
	index     map[string]int
	receivers map[string]bool
}

func newWorking(cluster *scheduling.Snapshot) *working {
	w := &working{base: cluster, nodes: append([]*scheduling.StateNode(nil), cluster.Nodes...), index: map[string]int{},
		receivers: map[string]bool{}}
	for i, n := range w.nodes {
		w.index[n.Name] = i
	}
	return w
}

// placement is a batch's simulation on the working cluster.
type placement struct {
	Plan *scheduling.Plan
	Pods map[types.NamespacedName]*corev1.Pod
	// Unschedulable is the first pod that would fit nowhere, with why ("" when every pod fits).
	Unschedulable string
	// stuck are the pods that would fit nowhere (namespace/name) with why.
	stuck map[string]string
	// extra are the nodes added to the working cluster for the simulation (a command's replacements).
	extra []*scheduling.StateNode
}

// replacementNodes are a command's replacements as the in-flight nodes they become, named after the plan, the
// command's place in it and their own.
func replacementNodes(cluster *scheduling.Snapshot, planID string, seq int, rs []*scheduling.NodeClaimPlan) []*scheduling.StateNode {
	out := make([]*scheduling.StateNode, 0, len(rs))
	for k, r := range rs {
		n := PlannedNode(cluster, r, fmt.Sprintf("%s-%d-%d", planID, seq, k), nil)
		n.InFlight = true
		out = append(out, n)
	}
	return out
}

// simulate plans the batch's pods on the working cluster without the batch's nodes (and with extra nodes).
func (w *working) simulate(ctx context.Context, batch []*Candidate, opts scheduling.Options, extra ...*scheduling.StateNode) (*placement, error) {
	gone := map[string]bool{}
	for _, c := range batch {
		gone[c.Node] = true
	}
	cluster := *w.base
	cluster.Nodes = make([]*scheduling.StateNode, 0, len(w.nodes))
	for _, n := range w.nodes {
		if n != nil && !gone[n.Name] {
			cluster.Nodes = append(cluster.Nodes, n)
		}
	}
	cluster.Nodes = append(cluster.Nodes, extra...)
	out := &placement{Pods: map[types.NamespacedName]*corev1.Pod{}, extra: extra}
	cluster.Pods = nil
	for _, c := range batch {
		for _, p := range c.reschedulablePods() {
			moved := p.DeepCopy()
			moved.Spec.NodeName = ""
			cluster.Pods = append(cluster.Pods, moved)
			out.Pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = moved
		}
	}
	opts.Bound = scheduling.BoundNone
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return nil, fmt.Errorf("simulating rescheduling: %w", err)
	}
	out.Plan = plan
	if len(plan.Unschedulable) > 0 {
		u := plan.Unschedulable[0]
		out.Unschedulable = fmt.Sprintf("pod %s would not fit anywhere else: %s", u.Pod, u.Reason)
		out.stuck = map[string]string{}
		for _, u := range plan.Unschedulable {
			out.stuck[u.Pod.String()] = u.Reason
		}
	}
	return out, nil
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

// apply records a chosen command: its candidates leave, its pods join the nodes they were placed on (copies: the
// snapshot is never modified), and its replacements join as in-flight nodes holding their pods.
func (w *working) apply(batch []*Candidate, sim *placement) {
	for _, c := range batch {
		if i, ok := w.index[c.Node]; ok {
			w.nodes[i] = nil
			delete(w.index, c.Node)
		}
	}
	for _, n := range sim.extra {
		w.index[n.Name] = len(w.nodes)
		w.nodes = append(w.nodes, n)
		w.receivers[n.Name] = true
	}
	for _, pl := range sim.Plan.Placements {
		i, ok := w.index[pl.Node]
		if !ok {
			continue
		}
		n := *w.nodes[i]
		p := sim.Pods[pl.Pod].DeepCopy()
		p.Spec.NodeName = n.Name
		n.Pods = append(append([]*corev1.Pod(nil), n.Pods...), p)
		w.nodes[i] = &n
		w.receivers[n.Name] = true
	}
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
