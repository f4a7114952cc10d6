package disruption

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/requirements"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// simulation is where the pods of some candidates would go if those candidates were gone.
type simulation struct {
	// Replacements are the new nodes the pods need.
	Replacements []*scheduling.NodeClaimPlan
	// Unschedulable is the first pod that would fit nowhere, with why ("" when every pod fits), and
	// UnschedulableCode the category of why.
	Unschedulable     string
	UnschedulableCode scheduling.ReasonCode
	// plan is the solve's plan and pods the moved pods it places, by name (nil when there was nothing to move).
	plan *scheduling.Plan
	pods map[types.NamespacedName]*corev1.Pod
}

// simulate removes the candidates' nodes from the cluster and plans their reschedulable pods with the
// provisioning scheduler: onto the remaining nodes first, then onto new NodeClaims.
func simulate(ctx context.Context, base *scheduling.Snapshot, cands []*Candidate, opts scheduling.Options) (*simulation, error) {
	gone := map[string]bool{}
	for _, c := range cands {
		gone[c.Node] = true
	}
	cluster := *base
	cluster.Nodes = make([]*scheduling.StateNode, 0, len(base.Nodes))
	for _, n := range base.Nodes {
		if !gone[n.Name] {
			cluster.Nodes = append(cluster.Nodes, n)
		}
	}
	cluster.Pods = nil
	pods := map[types.NamespacedName]*corev1.Pod{}
	for _, c := range cands {
		for _, p := range c.reschedulablePods() {
			moved := scheduling.Rescheduled(p)
			cluster.Pods = append(cluster.Pods, moved)
			pods[podKey(moved)] = moved
		}
	}
	if len(cluster.Pods) == 0 {
		return &simulation{}, nil
	}
	opts.Bound = scheduling.BoundNone // a simulation needs placements, not the lower bound (tenths of a second)
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return nil, fmt.Errorf("simulating rescheduling: %w", err)
	}
	out := &simulation{Replacements: plan.NodeClaims, plan: plan, pods: pods}
	if len(plan.Unschedulable) > 0 {
		u := plan.Unschedulable[0]
		out.Unschedulable = fmt.Sprintf("pod %s would not fit anywhere else: %s", u.Pod, u.Reason)
		out.UnschedulableCode = u.Code
	}
	return out, nil
}

func (s *simulation) placements() []scheduling.Placement {
	if s.plan == nil {
		return nil
	}
	return s.plan.Placements
}

// pendingPlaceable plans the pending pods on the cluster as it is and says how many of them the scheduler could
// place (on a node or on new capacity); "" when none could, so that pods no NodePool can take do not hold up
// consolidation.
func pendingPlaceable(ctx context.Context, snap *Snapshot, opts scheduling.Options) (string, error) {
	cluster := *snap.Cluster
	cluster.Pods = snap.Pending
	opts.Bound = scheduling.BoundNone
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return "", fmt.Errorf("planning pending pods: %w", err)
	}
	placed := len(snap.Pending) - len(plan.Unschedulable)
	if placed <= 0 {
		return "", nil
	}
	return fmt.Sprintf("%s waiting for capacity the provisioner can launch", pluralPods(placed)), nil
}

func pluralPods(n int) string {
	if n == 1 {
		return "1 pod is"
	}
	return fmt.Sprintf("%d pods are", n)
}

// evictions counts the candidates' pods that would be evicted and rescheduled.
func evictions(cands []*Candidate) int {
	n := 0
	for _, c := range cands {
		n += len(c.reschedulablePods())
	}
	return n
}

// totalPrice is the candidates' hourly price.
func totalPrice(cands []*Candidate) float64 {
	var sum float64
	for _, c := range cands {
		sum += c.Price
	}
	return sum
}

// MinSpotToSpotTypes is how many cheaper spot instance types a single spot node's replacement needs under
// SpotToSpotConsolidation, and how many of the cheapest the replacement launches from (more when minValues needs
// them): launching from the cheapest few means the launched type is among them, so the next pass does not find
// a cheaper spot type again and again (Karpenter's rule and number).
const MinSpotToSpotTypes = 15

// Unconsolidatable messages of spot-to-spot consolidation, worded as Karpenter's events.
const (
	msgSpotToSpotDisabled = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
	msgSpotToSpotTooFew   = "SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d"
)

// cheaperReplacement narrows a replacement to the instance-type options cheaper than price, so that whatever the
// cloud launches saves money, as Karpenter's consolidation does:
//   - when every candidate is spot and the replacement may be spot, the move is spot-to-spot: refused while the
//     SpotToSpotConsolidation gate (spotToSpot) is off; otherwise the replacement is spot only, and a single
//     candidate needs at least MinSpotToSpotTypes cheaper spot types and launches from the MinSpotToSpotTypes
//     cheapest (or as many as minValues needs);
//   - otherwise the cheaper options are kept, and when a candidate is spot and the replacement may be spot or
//     on-demand it is made spot (a spot node is not replaced by on-demand when spot would do).
//
// It returns the narrowed copy, or a reason why no option is left.
func cheaperReplacement(r *scheduling.NodeClaimPlan, cands []*Candidate, price float64, types []*cloudprovider.InstanceType, spotToSpot bool) (*scheduling.NodeClaimPlan, StayReason, string) {
	allSpot := len(cands) > 0 && !slices.ContainsFunc(cands, func(c *Candidate) bool { return c.CapacityType != karpv1.CapacityTypeSpot })
	anySpot := slices.ContainsFunc(cands, func(c *Candidate) bool { return c.CapacityType == karpv1.CapacityTypeSpot })
	reqs := plainRequirements(r.Requirements)
	spotAllowed := requirements.Allows(reqs, karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot)
	onDemandAllowed := requirements.Allows(reqs, karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
	spotOnly := false
	options := r.InstanceTypeOptions
	switch {
	case allSpot && spotAllowed:
		if !spotToSpot {
			return nil, StaySpotToSpot, msgSpotToSpotDisabled
		}
		spotOnly, options = true, spotOptions(r, types)
	case anySpot && spotAllowed && onDemandAllowed:
		spotOnly, options = true, spotOptions(r, types)
	}
	var kept []scheduling.InstanceTypeOption
	for _, o := range options {
		if o.Price < price {
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		return nil, StayNoCheaper, fmt.Sprintf("no instance type that fits its pods is cheaper than $%.4f/h (cheapest %s at $%.4f/h)", price, r.InstanceType, r.Price)
	}
	names := optionNames(kept)
	out := *r
	out.Requirements = narrowRequirements(r.Requirements, corev1.LabelInstanceTypeStable, names)
	if spotOnly {
		out.Requirements = narrowRequirements(out.Requirements, karpv1.CapacityTypeLabelKey, []string{karpv1.CapacityTypeSpot})
	}
	if key, have, want := minValuesShort(out.Requirements, names, types); key != "" {
		return nil, StayNoCheaper, fmt.Sprintf("the cheaper instance types keep %d values of %s, below its minValues %d", have, key, want)
	}
	if allSpot && spotOnly && len(cands) == 1 {
		if len(names) < MinSpotToSpotTypes {
			return nil, StaySpotToSpot, fmt.Sprintf(msgSpotToSpotTooFew, MinSpotToSpotTypes, len(names))
		}
		keep := max(MinSpotToSpotTypes, minValuesPrefix(out.Requirements, names, types))
		if keep < len(names) {
			names = names[:keep]
			kept = slices.DeleteFunc(kept, func(o scheduling.InstanceTypeOption) bool { return !slices.Contains(names, o.Name) })
			out.Requirements = narrowRequirements(out.Requirements, corev1.LabelInstanceTypeStable, names)
		}
	}
	out.InstanceTypeOptions = kept
	out.InstanceType, out.Zone, out.CapacityType, out.Price = kept[0].Name, kept[0].Zone, kept[0].CapacityType, kept[0].Price
	return &out, "", ""
}

// sameTypeLimit is the price a multi-node command's one replacement must stay below when the replacement could
// be of an instance type that one of the candidates already runs as: the price of the cheapest candidate of such a
// type, returned with it. Replacing several nodes by one like one of them ends where deleting the others ends, but
// launches a node and evicts the pods of the node that could have stayed. Karpenter's multi-node consolidation
// keeps the same limit. It returns +Inf and nil when no option is of a candidate's type.
func sameTypeLimit(r *scheduling.NodeClaimPlan, cands []*Candidate) (float64, *Candidate) {
	options := map[string]bool{}
	for _, o := range r.InstanceTypeOptions {
		options[o.Name] = true
	}
	limit, keep := math.Inf(1), (*Candidate)(nil)
	for _, c := range cands {
		if options[c.InstanceType] && c.Price < limit {
			limit, keep = c.Price, c
		}
	}
	return limit, keep
}

// spotOptions returns the replacement's options as spot: each instance type with its cheapest available spot
// offering in a zone the replacement allows, cheapest first; types without one are left out.
func spotOptions(r *scheduling.NodeClaimPlan, types []*cloudprovider.InstanceType) []scheduling.InstanceTypeOption {
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	reqs := plainRequirements(r.Requirements)
	var out []scheduling.InstanceTypeOption
	for _, o := range r.InstanceTypeOptions {
		if o.CapacityType == karpv1.CapacityTypeSpot {
			out = append(out, o)
			continue
		}
		it := byName[o.Name]
		if it == nil {
			continue
		}
		best := scheduling.InstanceTypeOption{}
		for _, off := range it.Offerings {
			if off.CapacityType != karpv1.CapacityTypeSpot || !off.Available || !requirements.Allows(reqs, corev1.LabelTopologyZone, off.Zone) {
				continue
			}
			if best.Name == "" || off.Price < best.Price || (off.Price == best.Price && off.Zone < best.Zone) {
				best = scheduling.InstanceTypeOption{Name: o.Name, Zone: off.Zone, CapacityType: karpv1.CapacityTypeSpot, Price: off.Price}
			}
		}
		if best.Name != "" {
			out = append(out, best)
		}
	}
	slices.SortStableFunc(out, func(a, b scheduling.InstanceTypeOption) int {
		switch {
		case a.Price < b.Price:
			return -1
		case a.Price > b.Price:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// optionNames returns the distinct instance type names of options, in their order.
func optionNames(options []scheduling.InstanceTypeOption) []string {
	names := make([]string, 0, len(options))
	for _, o := range options {
		if !slices.Contains(names, o.Name) {
			names = append(names, o.Name)
		}
	}
	return names
}

// minValuesPrefix returns how many of names (cheapest first) it takes to meet every minValues of reqs; 0 when
// reqs have none, len(names) when even all do not.
func minValuesPrefix(reqs []scheduling.NodeSelectorRequirementWithMinValues, names []string, types []*cloudprovider.InstanceType) int {
	if !slices.ContainsFunc(reqs, func(r scheduling.NodeSelectorRequirementWithMinValues) bool { return r.MinValues != nil }) {
		return 0
	}
	for n := 1; n <= len(names); n++ {
		if key, _, _ := minValuesShort(reqs, names[:n], types); key == "" {
			return n
		}
	}
	return len(names)
}

// plainRequirements drops the minValues of reqs.
func plainRequirements(reqs []scheduling.NodeSelectorRequirementWithMinValues) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.NodeSelectorRequirement)
	}
	return out
}

// capOptions narrows a replacement to the options priced at most limit (its cheapest option is). It returns r
// unchanged when that would break a minValues requirement.
func capOptions(r *scheduling.NodeClaimPlan, limit float64, types []*cloudprovider.InstanceType) *scheduling.NodeClaimPlan {
	var kept []scheduling.InstanceTypeOption
	names := []string{}
	for _, o := range r.InstanceTypeOptions {
		if o.Price <= limit+1e-12 {
			kept = append(kept, o)
			if !slices.Contains(names, o.Name) {
				names = append(names, o.Name)
			}
		}
	}
	if len(kept) == len(r.InstanceTypeOptions) || len(kept) == 0 {
		return r
	}
	out := *r
	out.InstanceTypeOptions = kept
	out.Requirements = narrowRequirements(r.Requirements, corev1.LabelInstanceTypeStable, names)
	if key, _, _ := minValuesShort(out.Requirements, names, types); key != "" {
		return r
	}
	return &out
}

// narrowRequirements intersects the requirement on key with values (adding an In requirement when there is none).
func narrowRequirements(reqs []scheduling.NodeSelectorRequirementWithMinValues, key string, values []string) []scheduling.NodeSelectorRequirementWithMinValues {
	out := make([]scheduling.NodeSelectorRequirementWithMinValues, 0, len(reqs)+1)
	found := false
	for _, r := range reqs {
		if r.Key != key {
			out = append(out, r)
			continue
		}
		found = true
		n := r
		n.NodeSelectorRequirement = *r.NodeSelectorRequirement.DeepCopy()
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			n.Values = slices.DeleteFunc(n.Values, func(v string) bool { return !slices.Contains(values, v) })
		case corev1.NodeSelectorOpNotIn:
			n.Operator = corev1.NodeSelectorOpIn
			n.Values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return slices.Contains(r.Values, v) })
		default:
			n.Operator, n.Values = corev1.NodeSelectorOpIn, slices.Clone(values)
		}
		out = append(out, n)
	}
	if !found {
		out = append(out, scheduling.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
			Key: key, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(values)}})
	}
	return out
}

// minValuesShort returns a requirement key whose minValues the named instance types no longer meet, with the
// count they have and the count wanted; "" when all are met.
func minValuesShort(reqs []scheduling.NodeSelectorRequirementWithMinValues, names []string, types []*cloudprovider.InstanceType) (string, int, int) {
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	for _, r := range reqs {
		if r.MinValues == nil {
			continue
		}
		distinct := map[string]bool{}
		for _, n := range names {
			if r.Key == corev1.LabelInstanceTypeStable {
				distinct[n] = true
			} else if it := byName[n]; it != nil {
				if v, ok := it.Labels[r.Key]; ok {
					distinct[v] = true
				}
			}
		}
		if len(distinct) < *r.MinValues {
			return r.Key, len(distinct), *r.MinValues
		}
	}
	return "", 0, 0
}

func describeCommand(c *Command, nodes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s", strings.ToLower(string(c.Reason)), c.Decision)
	if c.ConsolidationType != "" {
		fmt.Fprintf(&b, " (%s)", c.ConsolidationType)
	}
	fmt.Fprintf(&b, ": %d node(s) %s", len(nodes), strings.Join(nodes, ", "))
	if len(c.Replacements) > 0 {
		types := make([]string, 0, len(c.Replacements))
		for _, r := range c.Replacements {
			types = append(types, r.InstanceType)
		}
		fmt.Fprintf(&b, ", replaced by %s", strings.Join(types, ", "))
	}
	if c.Reason != karpv1.DisruptionReasonDrifted && c.Reason != karpv1.DisruptionReasonUnhealthy {
		fmt.Fprintf(&b, ", saving $%.4f/h", c.Savings)
	}
	return b.String()
}
