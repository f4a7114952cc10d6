package disruption

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	core "github.com/dovetail/dovetail/pkg/disruption"
)

// UnconsolidatableRepeat is how often an unchanged Unconsolidatable event is repeated for a node that stays.
const UnconsolidatableRepeat = 15 * time.Minute

// StayEventsPerPass is the most nodes a pass announces a stay for (Unconsolidatable or DisruptionBlocked, each an
// event on the Node and one on its NodeClaim); the others are announced by the next passes. client-go's event
// broadcaster queues 1,000 events and drops the rest with an error: at 5,000 nodes the first decision after
// consolidation was turned on announced 5,000 stays at once and most of its 10,000 events were dropped.
const StayEventsPerPass = 400

// announced is an event emitted for a NodeClaim: its message and when.
type announced struct {
	message string
	at      time.Time
}

// emitOnNodeAndClaim records the event on the Node and on its NodeClaim, each when known.
func (c *Controller) emitOnNodeAndClaim(node *corev1.Node, nc *karpv1.NodeClaim, eventType, reason, message string) {
	if node != nil {
		c.deps.Recorder.Event(node, eventType, reason, message)
	}
	if nc != nil {
		c.deps.Recorder.Event(nc, eventType, reason, message)
	}
}

// commandForNode describes a command as seen from one of its candidates: the whole command for a single node,
// the node and the size of the move otherwise.
func commandForNode(decision, message, node string, candidates int) string {
	if candidates <= 1 {
		return message
	}
	return fmt.Sprintf("%s node %s, one of %d nodes consolidated together", decision, node, candidates)
}

// announceConsolidation emits, for a consolidation command that starts, ConsolidationCandidate on every
// candidate's Node and NodeClaim with the move and its savings, and, for candidates of NodePools with
// consolidationPolicy Balanced, ConsolidationApproved with the score: on the Node and NodeClaim for a
// single-node move, on the NodePool for a move of several nodes.
func (c *Controller) announceConsolidation(st *state, cmd *core.Command, claims []*karpv1.NodeClaim) {
	if cmd.Reason != karpv1.DisruptionReasonUnderutilized {
		return
	}
	for i, cand := range cmd.Candidates {
		msg := fmt.Sprintf("Consolidation candidate: %s (savings: $%.2f)",
			commandForNode(cmd.Decision, cmd.Message(), cand.Node, len(cmd.Candidates)), cmd.Savings)
		c.emitOnNodeAndClaim(st.Nodes[cand.Node], claims[i], corev1.EventTypeNormal, karpv1.EventReasonConsolidationCandidate, msg)
	}
	for _, s := range cmd.Scores {
		if !s.Approved {
			continue
		}
		msg := scoreMessage(s)
		if len(cmd.Candidates) == 1 {
			c.emitOnNodeAndClaim(st.Nodes[cmd.Candidates[0].Node], claims[0], corev1.EventTypeNormal, karpv1.EventReasonConsolidationApproved, msg)
			continue
		}
		if np := st.NodePools[s.NodePool]; np != nil {
			c.deps.Recorder.Event(np, corev1.EventTypeNormal, karpv1.EventReasonConsolidationApproved, msg)
		}
	}
}

// scoreMessage says a Balanced score that passed its threshold.
func scoreMessage(s core.Score) string {
	k := 0.0
	if s.Threshold > 0 {
		k = 1 / s.Threshold
	}
	return fmt.Sprintf("Balanced consolidation approved for nodepool %s: score %.2f >= threshold %.2f (k %.0f, saves %.1f%% of the pool's cost for %.1f%% of its disruption cost)",
		s.NodePool, s.Value, s.Threshold, k, 100*s.SavingsFraction, 100*s.DisruptionFraction)
}

// announceRejected emits ConsolidationRejected on the Node and NodeClaim of each candidate of a consolidation
// command abandoned because its pods no longer fit (Karpenter's validation failing), beside DisruptionAborted.
func (c *Controller) announceRejected(st *state, r Record, candidates []*karpv1.NodeClaim, why string) {
	if r.Reason != karpv1.DisruptionReasonUnderutilized {
		return
	}
	for _, nc := range candidates {
		var node *corev1.Node
		if nc.Status.NodeName != "" {
			node = st.Nodes[nc.Status.NodeName]
		}
		msg := fmt.Sprintf("Consolidation rejected: %s, reason: %s",
			commandForNode(r.Decision, r.Message, nc.Status.NodeName, r.Candidates), strings.TrimSpace(why))
		c.emitOnNodeAndClaim(node, nc, corev1.EventTypeNormal, karpv1.EventReasonConsolidationRejected, msg)
	}
}

// BlockedPoolRepeat is how often DisruptionBlocked is repeated on a NodePool whose budgets stay at zero.
const BlockedPoolRepeat = time.Minute

// announceBlockedPools emits DisruptionBlocked on each NodePool with nodes whose disruption budgets allow no node
// at all for a reason now (whatever is already disrupting), at most once a BlockedPoolRepeat per NodePool and
// reason.
func (c *Controller) announceBlockedPools(st *state, counts map[string]int) {
	names := make([]string, 0, len(st.NodePools))
	for name := range st.NodePools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		np := st.NodePools[name]
		if counts[name] == 0 {
			continue
		}
		allowed, err := core.AllowedDisruptions(np, st.Now, counts[name], 0)
		if err != nil {
			continue // an invalid budget is reported by the decision
		}
		for _, r := range core.Reasons() {
			if allowed[r] != 0 {
				continue
			}
			key := name + "/" + string(r)
			if last, ok := c.blockedPools[key]; ok && st.Now.Sub(last) < BlockedPoolRepeat {
				continue
			}
			c.blockedPools[key] = st.Now
			c.deps.Recorder.Event(np, corev1.EventTypeNormal, karpv1.EventReasonDisruptionBlocked,
				fmt.Sprintf("The disruption budgets of nodepool %s allow no node to be disrupted for reason %s now", name, r))
		}
	}
	for key, at := range c.blockedPools {
		if st.Now.Sub(at) >= BlockedPoolRepeat {
			delete(c.blockedPools, key)
		}
	}
}
