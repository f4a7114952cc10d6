// Package repair decides which unhealthy nodes to repair (the NodeRepair feature gate): a node whose condition
// has matched one of the cloud provider's repair policies for the policy's whole toleration is repaired, unless
// its NodePool (the cluster, for a node of no NodePool) has more unhealthy nodes than the safety limit, in which
// case repair holds back. It is a pure function of a snapshot and a time.
package repair

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// AllowedUnhealthyPercent is the share of a NodePool's nodes that may be unhealthy while repair goes on, as in
// Karpenter. The count it allows is rounded up (as a PodDisruptionBudget's maxUnavailable is), so a NodePool of
// 1 to 5 nodes allows 1 unhealthy node, one of 6 to 10 allows 2.
const AllowedUnhealthyPercent = 20

// HeldBackRecheck is how long a node whose repair is held back waits before it is looked at again (Karpenter's
// figure); a change of its own conditions brings it back sooner.
const HeldBackRecheck = 5 * time.Minute

// AllowedUnhealthy returns how many of total nodes may be unhealthy with repair going on.
func AllowedUnhealthy(total int) int {
	return (total*AllowedUnhealthyPercent + 99) / 100
}

// Verdict is what repair does about a node now.
type Verdict string

const (
	// Healthy: no repair policy matches the node's conditions.
	Healthy Verdict = "Healthy"
	// Tolerated: a policy matches, but not yet for its whole toleration; the node is repaired at RepairAt.
	Tolerated Verdict = "Tolerated"
	// Repair: the toleration has passed and the node's group is within the safety limit: force-terminate it.
	Repair Verdict = "Repair"
	// HeldBack: the toleration has passed but the node's group has more unhealthy nodes than the safety limit.
	HeldBack Verdict = "HeldBack"
)

// Health is how a node stands against the repair policies.
type Health struct {
	// Unhealthy says a policy matches. The fields below are set only then.
	Unhealthy bool
	// Condition is the node condition that matched, and Policy the policy it matched (with the toleration in
	// force). When several match, the one with the earliest RepairAt.
	Condition corev1.NodeCondition
	Policy    cloudprovider.RepairPolicy
	// Since is when the condition took its status (its lastTransitionTime); RepairAt is Since plus the toleration.
	Since    time.Time
	RepairAt time.Time
}

// Check returns the node's health against the policies: the match whose toleration ends first.
func Check(node *corev1.Node, policies []cloudprovider.RepairPolicy) Health {
	return CheckAt(node, policies, time.Time{}, time.Time{})
}

// CheckAt returns the node's health against the policies at now. A policy with a Reason pattern matches a
// condition of its type and status whose reason the pattern accepts; one without applies to a condition no
// patterned policy of the same type and status matched. Tolerations count from the condition's
// lastTransitionTime, or from notBefore when later (the end of the node's last reboot, so a condition a reboot
// did not clear gets its whole toleration again). Among the matches whose toleration has passed, a replacement
// wins over a reboot (the node needs more than a reboot), then the earliest; with none passed, the earliest.
func CheckAt(node *corev1.Node, policies []cloudprovider.RepairPolicy, now, notBefore time.Time) Health {
	var h Health
	better := func(c Health) bool {
		if !h.Unhealthy {
			return true
		}
		cDue, hDue := !now.IsZero() && !now.Before(c.RepairAt), !now.IsZero() && !now.Before(h.RepairAt)
		if cDue != hDue {
			return cDue
		}
		if cDue && c.Policy.Reboots() != h.Policy.Reboots() {
			return !c.Policy.Reboots()
		}
		return c.RepairAt.Before(h.RepairAt)
	}
	for _, c := range node.Status.Conditions {
		patterned := false
		for _, p := range policies {
			if c.Type == p.ConditionType && c.Status == p.ConditionStatus && p.Reason != "" && p.MatchesReason(c.Reason) {
				patterned = true
			}
		}
		for _, p := range policies {
			if c.Type != p.ConditionType || c.Status != p.ConditionStatus || (p.Reason == "" && patterned) || !p.MatchesReason(c.Reason) {
				continue
			}
			since := c.LastTransitionTime.Time
			start := since
			if notBefore.After(start) {
				start = notBefore
			}
			cand := Health{Unhealthy: true, Condition: c, Policy: p, Since: since, RepairAt: start.Add(p.TolerationDuration)}
			if better(cand) {
				h = cand
			}
		}
	}
	return h
}

// Group is the set of nodes the safety limit applies to: a NodePool's nodes, or, for a node of no NodePool, every
// node of the cluster.
type Group struct {
	// NodePool names the group; empty for the whole cluster.
	NodePool string
	// Nodes, Unhealthy and Allowed count the group's nodes, those a policy matches (whether or not their
	// toleration has passed), and how many may be unhealthy with repair going on.
	Nodes, Unhealthy, Allowed int
}

// OverLimit reports whether the group has more unhealthy nodes than the safety limit.
func (g Group) OverLimit() bool { return g.Unhealthy > g.Allowed }

// Describe says what the group is, for messages: "NodePool default" or "the cluster".
func (g Group) Describe() string {
	if g.NodePool == "" {
		return "the cluster"
	}
	return "NodePool " + g.NodePool
}

// Decision is what repair does about one node.
type Decision struct {
	Node    string
	Verdict Verdict
	Health  Health
	Group   Group
	// Recheck is when the node should be looked at again if nothing changes: RepairAt when Tolerated, Now plus
	// HeldBackRecheck when HeldBack; zero otherwise.
	Recheck time.Time
	// Action is what a Repair verdict does: RepairReplace (or empty) or RepairReboot. Escalated says the policy
	// asked for a reboot but the node had RebootsBeforeReplacement recent ones, so it is replaced.
	Action    cloudprovider.RepairAction
	Escalated bool
}

// Reboots says the decision is to reboot the node in place.
func (d Decision) Reboots() bool {
	return d.Verdict == Repair && d.Action == cloudprovider.RepairReboot
}

// Message says the decision in one sentence, e.g. for events and `dovetailctl explain node`.
func (d Decision) Message() string {
	h := d.Health
	cond := fmt.Sprintf("%s=%s since %s", h.Condition.Type, h.Condition.Status, h.Since.UTC().Format(time.RFC3339))
	if h.Policy.Reason != "" {
		cond = fmt.Sprintf("%s=%s, reason %s, since %s", h.Condition.Type, h.Condition.Status, h.Condition.Reason, h.Since.UTC().Format(time.RFC3339))
	}
	switch d.Verdict {
	case Tolerated:
		return fmt.Sprintf("unhealthy (%s); would be repaired at %s, after the %s toleration", cond,
			h.RepairAt.UTC().Format(time.RFC3339), h.Policy.TolerationDuration)
	case Repair:
		if d.Reboots() {
			return fmt.Sprintf("unhealthy (%s) past its %s toleration since %s: rebooted in place", cond, h.Policy.TolerationDuration,
				h.RepairAt.UTC().Format(time.RFC3339))
		}
		msg := fmt.Sprintf("unhealthy (%s) past its %s toleration since %s: repaired now (its NodeClaim deleted, the drain not waiting for PodDisruptionBudgets)",
			cond, h.Policy.TolerationDuration, h.RepairAt.UTC().Format(time.RFC3339))
		if d.Escalated {
			msg += fmt.Sprintf("; replaced, not rebooted, after %d reboots within %s", RebootsBeforeReplacement, RebootHistoryWindow)
		}
		return msg
	case HeldBack:
		return fmt.Sprintf("unhealthy (%s) past its %s toleration since %s, but repair holds back: %s",
			cond, h.Policy.TolerationDuration, h.RepairAt.UTC().Format(time.RFC3339), d.Group.LimitMessage())
	default:
		return "healthy: no repair policy matches its conditions"
	}
}

// LimitMessage says why the group holds repair back.
func (g Group) LimitMessage() string {
	return fmt.Sprintf("%d of %d nodes in %s are unhealthy, more than the %d%% limit (%d)",
		g.Unhealthy, g.Nodes, g.Describe(), AllowedUnhealthyPercent, g.Allowed)
}

// Input is what Decide looks at.
type Input struct {
	Now time.Time
	// Policies are the cloud provider's repair policies, with any toleration overrides applied (WithTolerations).
	Policies []cloudprovider.RepairPolicy
	// Nodes are every Node of the cluster; a node's group is read from its karpenter.sh/nodepool label.
	Nodes []*corev1.Node
	// RebootEnded is, by node name, when the node's last reboot ended (its NodeClaim's Rebooting condition turned
	// false): tolerations count from then at the earliest.
	RebootEnded map[string]time.Time
	// RecentReboots counts, by node name, the reboots repair asked for within RebootHistoryWindow: a node that
	// had RebootsBeforeReplacement of them is replaced instead of rebooted again.
	RecentReboots map[string]int
}

// RebootsBeforeReplacement is how many reboots within RebootHistoryWindow repair tries on a node before it
// replaces it instead (Karpenter v1.15's figures).
const (
	RebootsBeforeReplacement = 2
	RebootHistoryWindow      = 24 * time.Hour
)

// Decide returns a decision for each node of the input, sorted by node name.
func Decide(in Input) []Decision {
	health := make([]Health, len(in.Nodes))
	groups := map[string]*Group{}
	cluster := &Group{}
	for i, n := range in.Nodes {
		health[i] = CheckAt(n, in.Policies, in.Now, in.RebootEnded[n.Name])
		pool := n.Labels[karpv1.NodePoolLabelKey]
		g := groups[pool]
		if g == nil && pool != "" {
			g = &Group{NodePool: pool}
			groups[pool] = g
		}
		for _, gg := range []*Group{g, cluster} {
			if gg == nil {
				continue
			}
			gg.Nodes++
			if health[i].Unhealthy {
				gg.Unhealthy++
			}
		}
	}
	out := make([]Decision, len(in.Nodes))
	for i, n := range in.Nodes {
		g := cluster
		if pool := n.Labels[karpv1.NodePoolLabelKey]; pool != "" {
			g = groups[pool]
		}
		grp := *g
		grp.Allowed = AllowedUnhealthy(grp.Nodes)
		d := Decision{Node: n.Name, Health: health[i], Group: grp}
		h := health[i]
		switch {
		case !h.Unhealthy:
			d.Verdict = Healthy
		case in.Now.Before(h.RepairAt):
			d.Verdict, d.Recheck = Tolerated, h.RepairAt
		case grp.OverLimit():
			d.Verdict, d.Recheck = HeldBack, in.Now.Add(HeldBackRecheck)
		default:
			d.Verdict = Repair
			if h.Policy.Reboots() {
				d.Action = cloudprovider.RepairReboot
				if in.RecentReboots[n.Name] >= RebootsBeforeReplacement {
					d.Action, d.Escalated = cloudprovider.RepairReplace, true
				}
			}
		}
		out[i] = d
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// DecideNode returns the decision for the named node, which must be one of in.Nodes.
func DecideNode(in Input, name string) (Decision, bool) {
	for _, d := range Decide(in) {
		if d.Node == name {
			return d, true
		}
	}
	return Decision{}, false
}

// WithTolerations returns the policies with the toleration of every policy of a condition type in overrides
// replaced. A condition type no policy has is an error naming it.
func WithTolerations(policies []cloudprovider.RepairPolicy, overrides map[string]time.Duration) ([]cloudprovider.RepairPolicy, error) {
	out := append([]cloudprovider.RepairPolicy(nil), policies...)
	var unknown []string
	for t, d := range overrides {
		found := false
		for i := range out {
			if string(out[i].ConditionType) == t {
				out[i].TolerationDuration = d
				found = true
			}
		}
		if !found {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var known []string
		seen := map[string]bool{}
		for _, p := range policies {
			if !seen[string(p.ConditionType)] {
				seen[string(p.ConditionType)] = true
				known = append(known, string(p.ConditionType))
			}
		}
		return nil, fmt.Errorf("no repair policy of the cloud provider watches condition %s (policies watch: %s)",
			strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

var upperRun = regexp.MustCompile(`([a-z0-9])([A-Z])`)

// ConditionLabel turns a condition type into the condition label of karpenter_nodeclaims_unhealthy_disrupted_total:
// AcceleratedHardwareReady -> accelerated_hardware_ready.
func ConditionLabel(s string) string {
	return strings.ToLower(upperRun.ReplaceAllString(s, "${1}_${2}"))
}
