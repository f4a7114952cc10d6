package disruption

import (
	"context"
	"sort"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Repair says that node repair replaces the candidate (Karpenter v1.15's repair as a disruption method: the
// NodeRepair gate on, LEGACY_NODE_REPAIR off). The controller sets it on a candidate whose node has matched one
// of the cloud provider's repair policies past the policy's toleration, within the safety limit and without
// karpenter.sh/do-not-repair.
type Repair struct {
	// Condition is the node condition that matched (e.g. KernelReady) and Message the repair decision in one
	// sentence, for events and logs.
	Condition string
	Message   string
	// Eligible is when the toleration ended: the candidates waiting longest are repaired first.
	Eligible time.Time
	// DrainBound bounds the drain of the repaired node: the policy's termination grace period, or the NodeClaim's
	// when shorter. Nil when the policy sets none: the NodeClaim's own terminationGracePeriod applies.
	DrainBound *time.Duration
	// NodeClaimGracePeriod says the NodeClaim has a terminationGracePeriod. A node with pods that block a drain
	// (do-not-disrupt, a PodDisruptionBudget allowing nothing) is repaired only with a bound on its drain.
	NodeClaimGracePeriod bool
	// Reboot says the node is rebooted in place rather than replaced (a policy of the AWS gate RebootForRepair):
	// no simulation, no replacement, the pods stay; it takes a place in the Unhealthy budget like a replacement.
	Reboot bool
}

// repair runs before drift: it replaces every candidate with a Repair, oldest eligibility first, replacement
// first (the replacements launch and initialize before the node is drained), within the NodePools' budgets for
// the reason Unhealthy. A candidate not yet initialized runs no workload and needs no budget. Unlike the other
// methods it also takes candidates with do-not-disrupt or PodDisruptionBudget-blocked pods, as long as its drain
// is bounded.
func (d *decider) repair(ctx context.Context, all []*Candidate) error {
	var due []*Candidate
	for _, c := range all {
		if c.Repair != nil && !c.Deleting && d.snap.NodePools[c.NodePool] != nil {
			due = append(due, c)
		}
	}
	if len(due) == 0 {
		return nil
	}
	d.result.Eligible[karpv1.DisruptionReasonUnhealthy] = len(due)
	sort.SliceStable(due, func(i, j int) bool {
		if !due[i].Repair.Eligible.Equal(due[j].Repair.Eligible) {
			return due[i].Repair.Eligible.Before(due[j].Repair.Eligible)
		}
		return due[i].NodeClaim < due[j].NodeClaim
	})
	for _, c := range due {
		if d.taken[c.NodeClaim] {
			continue
		}
		if c.Initialized && !d.room(c, karpv1.DisruptionReasonUnhealthy) {
			d.examined[c.NodeClaim] = true
			continue
		}
		if c.Repair.Reboot {
			d.acceptReboot(c)
			continue
		}
		if c.Repair.DrainBound == nil && !c.Repair.NodeClaimGracePeriod {
			if s := blocker(c, d.snap.NodePools, d.snap.PodDisruptionBudgets, d.snap.Now); s != nil && (s.Reason == StayDoNotDisrupt || s.Reason == StayPDB) {
				d.examined[c.NodeClaim] = true
				d.stayf(c, StayRepairBlocked, "unhealthy (%s), but repair needs a termination grace period to drain past blocking pods: %s", c.Repair.Condition, s.Message)
				continue
			}
		}
		// The pods of an unhealthy node go to healthy nodes, not to the other nodes under repair.
		sim, err := d.simulateAway(ctx, c, due)
		if err != nil {
			return err
		}
		d.examined[c.NodeClaim] = true
		if sim.Unschedulable != "" {
			done, err := d.terminateFirst(ctx, c, sim, karpv1.DisruptionReasonUnhealthy, d.opts.TerminateFirstRepair)
			if err != nil {
				return err
			}
			if done {
				continue
			}
			d.stayf(c, StayRepairBlocked, "unhealthy (%s), but it cannot be replaced: %s", c.Repair.Condition, sim.Unschedulable)
			continue
		}
		cmd := &Command{Reason: karpv1.DisruptionReasonUnhealthy, Decision: DecisionDelete, Candidates: []*Candidate{c},
			Replacements: sim.Replacements, Placements: sim.placements(), Savings: c.Price - replacementPrice(sim.Replacements)}
		if len(sim.Replacements) > 0 {
			cmd.Decision = DecisionReplace
		}
		d.accept(cmd, sim)
	}
	return nil
}

// acceptReboot adds a reboot command for c: it uses up a place in its NodePool's budgets (when initialized, as
// a replacement would), moves no pods, and takes no others' for the rest of the pass.
func (d *decider) acceptReboot(c *Candidate) {
	d.taken[c.NodeClaim] = true
	d.examined[c.NodeClaim] = true
	for r, n := range d.allowed[c.NodePool] {
		if c.Initialized {
			d.allowed[c.NodePool][r] = max(0, n-1)
		}
	}
	d.work.close(c.Node)
	d.result.Commands = append(d.result.Commands, &Command{Reason: karpv1.DisruptionReasonUnhealthy, Decision: DecisionReboot,
		Candidates: []*Candidate{c}})
}
