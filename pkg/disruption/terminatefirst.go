package disruption

import (
	"context"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Why a terminate-first command could not launch its replacement first (Command.TerminateFirstReason), as the
// terminate_first_reason label of karpenter_voluntary_disruption_terminate_first_decisions_total spells it.
const (
	// TerminateFirstNoReservedCapacity: the node runs in a capacity reservation with no room left, and its pods
	// need that room: the replacement launches into the room the node gives back (Karpenter's value).
	TerminateFirstNoReservedCapacity = "no-reserved-capacity"
	// TerminateFirstStaticAtLimit: a static NodePool at its limits.nodes cannot create the replacement beside the
	// node (Karpenter's value).
	TerminateFirstStaticAtLimit = "static-at-limit"
	// TerminateFirstAtLimit: a NodePool that is not static is at its limits, which the node itself uses up
	// (Dovetail's value: Karpenter leaves such a node blocked).
	TerminateFirstAtLimit = "at-limit"
)

// terminateFirst adds a terminate-first command for c, whose pods the simulation sim could not place, when the
// gate is on and a replacement could launch once c is gone: first because c gives back its room in a full capacity
// reservation (terminateFirstReserved), then, for node repair, because c uses up its NodePool's limits. It reports
// whether it added one.
func (d *decider) terminateFirst(ctx context.Context, c *Candidate, sim *simulation, reason karpv1.DisruptionReason, gate bool) (bool, error) {
	if !gate {
		return false, nil
	}
	if done, err := d.terminateFirstReserved(ctx, c, reason, gate); err != nil || done {
		return done, err
	}
	if sim.UnschedulableCode != scheduling.ReasonLimits || !d.refillable(c) {
		return false, nil
	}
	d.accept(&Command{Reason: reason, Decision: DecisionTerminateFirst, TerminateFirstReason: TerminateFirstAtLimit,
		Candidates: []*Candidate{c}, Savings: c.Price}, nil)
	return true, nil
}

// refillable reports whether c's NodePool can launch again once c is gone (Ready, not being deleted).
func (d *decider) refillable(c *Candidate) bool {
	np := d.snap.NodePools[c.NodePool]
	return np != nil && np.DeletionTimestamp.IsZero() && np.IsTrue(karpv1.ConditionTypeReady)
}

// terminateFirstReserved adds a terminate-first command for c when the gate is on, c runs in a capacity
// reservation (capacity type reserved, with its id), and c's pods, which found no place with c still in its
// reservation, all find one once c's room in the reservation is given back, using that room at most once: the
// replacement can only launch into the room c holds. A reservation that offers nothing for another reason than
// being full (expiring, its zone unusable) stays closed, so c is not deleted for nothing. It reports whether it
// added the command.
func (d *decider) terminateFirstReserved(ctx context.Context, c *Candidate, reason karpv1.DisruptionReason, gate bool) (bool, error) {
	if !gate || c.CapacityType != karpv1.CapacityTypeReserved || c.ReservationID == "" {
		return false, nil
	}
	credited, slots := creditReservation(d.work.cluster, c.ReservationID)
	if len(slots) == 0 {
		return false, nil
	}
	sim, err := simulate(ctx, credited, []*Candidate{c}, d.opts.Scheduling)
	if err != nil {
		return false, err
	}
	if sim.Unschedulable != "" || reservedReplacements(sim.Replacements, slots) > 1 {
		return false, nil
	}
	// The replacements are not launched by the command: the provisioner launches them for the pods once the node
	// is gone. The working cluster still counts them for the rest of the pass.
	cmd := &Command{Reason: reason, Decision: DecisionTerminateFirst, TerminateFirstReason: TerminateFirstNoReservedCapacity,
		Candidates: []*Candidate{c}, Placements: sim.placements(), Savings: c.Price - replacementPrice(sim.Replacements)}
	d.accept(cmd, sim)
	return true, nil
}

// slot is an instance type in a zone that a reservation offers.
type slot struct{ instanceType, zone string }

// creditReservation returns a copy of cluster in which the reservation id has room for one more instance where it
// is full (its offering unavailable with no room: ReservationCapacity 0), with the instance types and zones it
// then offers. An offering of the reservation that is unavailable with room left is unavailable for another
// reason, and stays so. Instance types that change are copied; cluster is not modified.
func creditReservation(cluster *scheduling.Snapshot, id string) (*scheduling.Snapshot, map[slot]bool) {
	out := *cluster
	out.InstanceTypes = make(map[string][]*cloudprovider.InstanceType, len(cluster.InstanceTypes))
	slots := map[slot]bool{}
	for pool, types := range cluster.InstanceTypes {
		copied, changed := types, false
		for i, it := range types {
			var offs []cloudprovider.Offering
			for j, o := range it.Offerings {
				if o.ReservationID != id || o.CapacityType != karpv1.CapacityTypeReserved || o.Available || o.ReservationCapacity != 0 {
					continue
				}
				if offs == nil {
					offs = append([]cloudprovider.Offering(nil), it.Offerings...)
				}
				offs[j].Available, offs[j].ReservationCapacity = true, 1
				slots[slot{it.Name, o.Zone}] = true
			}
			if offs == nil {
				continue
			}
			if !changed {
				copied, changed = append([]*cloudprovider.InstanceType(nil), types...), true
			}
			cp := *it
			cp.Offerings = offs
			copied[i] = &cp
		}
		out.InstanceTypes[pool] = copied
	}
	return &out, slots
}

// reservedReplacements counts the replacements planned into the credited reservation's room.
func reservedReplacements(rs []*scheduling.NodeClaimPlan, slots map[slot]bool) int {
	n := 0
	for _, r := range rs {
		if r.CapacityType == karpv1.CapacityTypeReserved && slots[slot{r.InstanceType, r.Zone}] {
			n++
		}
	}
	return n
}
