package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/repair"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/termination"
)

// RepairInLoop says whether node repair runs as a disruption method in this controller (Karpenter v1.15's
// default): the NodeRepair gate on and LEGACY_NODE_REPAIR off. Otherwise the node.health controller repairs.
func RepairInLoop(s *settings.Settings) bool {
	return s != nil && s.FeatureEnabled(settings.FeatureNodeRepair) && !s.LegacyNodeRepair
}

// repairPolicies are the cloud provider's repair policies with NODE_REPAIR_TOLERATIONS applied.
func (c *Controller) repairPolicies() ([]cloudprovider.RepairPolicy, error) {
	var overrides map[string]time.Duration
	if c.deps.Settings != nil {
		overrides = c.deps.Settings.NodeRepairTolerations
	}
	p, err := repair.WithTolerations(c.deps.CloudProvider.RepairPolicies(), overrides)
	if err != nil {
		return nil, fmt.Errorf("NODE_REPAIR_TOLERATIONS (--node-repair-tolerations): %w", err)
	}
	return p, nil
}

// markRepairs sets Candidate.Repair on the snapshot's candidates that node repair replaces now: past their
// policy's toleration, within the safety limit, without karpenter.sh/do-not-repair. A node held back by the
// safety limit gets NodeRepairBlocked (on its Node, NodeClaim and NodePool), one vetoed by do-not-repair
// DisruptionBlocked, each when its message changes or HeldBackRecheck after the last one.
func (c *Controller) markRepairs(ctx context.Context, st *state, snap *core.Snapshot) error {
	c.repairDue = time.Time{}
	if !RepairInLoop(c.deps.Settings) || len(snap.Candidates) == 0 {
		return nil
	}
	policies, err := c.repairPolicies()
	if err != nil {
		return err
	}
	in := repair.Input{Now: st.Now, Policies: policies, RebootEnded: map[string]time.Time{}, RecentReboots: map[string]int{}}
	for _, n := range st.Nodes {
		in.Nodes = append(in.Nodes, n)
	}
	c.forgetReboots(st.Now)
	for i := range st.Claims {
		nc := &st.Claims[i]
		if nc.Status.NodeName == "" {
			continue
		}
		if cond := nc.GetCondition(karpv1.ConditionTypeRebooting); cond != nil && cond.Status == metav1.ConditionFalse {
			in.RebootEnded[nc.Status.NodeName] = cond.LastTransitionTime.Time
		}
		in.RecentReboots[nc.Status.NodeName] = len(c.reboots[nc.UID])
	}
	decisions := map[string]repair.Decision{}
	for _, d := range repair.Decide(in) {
		decisions[d.Node] = d
		if !d.Recheck.IsZero() && (c.repairDue.IsZero() || d.Recheck.Before(c.repairDue)) {
			c.repairDue = d.Recheck
		}
	}
	seen := map[string]bool{}
	for _, cand := range snap.Candidates {
		d, ok := decisions[cand.Node]
		nc := st.claim(cand.NodeClaim)
		node := st.Nodes[cand.Node]
		if !ok || nc == nil || node == nil {
			continue
		}
		switch d.Verdict {
		case repair.HeldBack:
			seen[nc.Name] = true
			msg := d.Group.LimitMessage()
			if c.noticeRepair(nc.Name, msg, st.Now) {
				log.FromContext(ctx).Info("node repair held back", "node", node.Name, "nodeclaim", nc.Name, "nodepool", d.Group.NodePool,
					"condition", d.Health.Condition.Type, "unhealthy", d.Group.Unhealthy, "nodes", d.Group.Nodes, "allowed", d.Group.Allowed)
				c.emitOnNodeAndClaim(node, nc, corev1.EventTypeWarning, karpv1.EventReasonNodeRepairBlocked, msg)
				if np := st.NodePools[d.Group.NodePool]; np != nil {
					c.deps.Recorder.Event(np, corev1.EventTypeWarning, karpv1.EventReasonNodeRepairBlocked, msg)
				}
			}
		case repair.Repair:
			if node.Annotations[karpv1.DoNotRepairAnnotationKey] == "true" || nc.Annotations[karpv1.DoNotRepairAnnotationKey] == "true" {
				seen[nc.Name] = true
				msg := fmt.Sprintf("Repair is blocked through the %q annotation", karpv1.DoNotRepairAnnotationKey)
				if c.noticeRepair(nc.Name, msg, st.Now) {
					log.FromContext(ctx).V(1).Info("node unhealthy, repair blocked by annotation", "node", node.Name, "nodeclaim", nc.Name,
						"annotation", karpv1.DoNotRepairAnnotationKey, "condition", d.Health.Condition.Type)
					c.emitOnNodeAndClaim(node, nc, corev1.EventTypeNormal, karpv1.EventReasonDisruptionBlocked, msg)
				}
				continue
			}
			cand.Repair = repairOf(d, nc)
			if d.Escalated {
				log.FromContext(ctx).Info("node rebooted too often, replacing it instead", "node", node.Name, "nodeclaim", nc.Name,
					"reboots", in.RecentReboots[node.Name], "window", repair.RebootHistoryWindow.String())
			}
		}
	}
	for name := range c.repairNotices {
		if !seen[name] {
			delete(c.repairNotices, name)
		}
	}
	return nil
}

// noticeRepair reports whether a repair notice for the NodeClaim is due: its message changed, or HeldBackRecheck
// passed since the last one.
func (c *Controller) noticeRepair(nodeClaim, msg string, now time.Time) bool {
	last, ok := c.repairNotices[nodeClaim]
	if ok && last.message == msg && now.Sub(last.at) < repair.HeldBackRecheck {
		return false
	}
	c.repairNotices[nodeClaim] = announced{message: msg, at: now}
	return true
}

// repairOf describes the repair of a node whose decision is repair.Repair. The drain is bounded by the policy's
// termination grace period, or the NodeClaim's when shorter (Karpenter v1.15).
func repairOf(d repair.Decision, nc *karpv1.NodeClaim) *core.Repair {
	r := &core.Repair{
		Condition:            string(d.Health.Condition.Type),
		Message:              "Unhealthy: " + d.Message(),
		Eligible:             d.Health.RepairAt,
		NodeClaimGracePeriod: nc.Spec.TerminationGracePeriod != nil,
		Reboot:               d.Reboots(),
	}
	if p := d.Health.Policy.TerminationGracePeriod; p != nil {
		bound := *p
		if g := nc.Spec.TerminationGracePeriod; g != nil && g.Duration < bound {
			bound = g.Duration
		}
		r.DrainBound = &bound
	}
	return r
}

// stampRepairDeadline bounds the drain of a node repair deletes: karpenter.sh/nodeclaim-termination-timestamp
// set to now plus the command's drain bound, unless the NodeClaim already holds an earlier one.
func (c *Controller) stampRepairDeadline(ctx context.Context, r Record, nc *karpv1.NodeClaim) error {
	if r.Reason != karpv1.DisruptionReasonUnhealthy || r.DrainBound == "" {
		return nil
	}
	bound, err := time.ParseDuration(r.DrainBound)
	if err != nil {
		return fmt.Errorf("command %s: drain bound %q: %w", r.ID, r.DrainBound, err)
	}
	deadline := c.deps.Clock.Now().Add(bound)
	// The command's earlier writes (its record, its condition) changed the NodeClaim since it was read: on a
	// conflict it is read again.
	cur := nc
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if v, ok := cur.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
			if t, err := termination.ParseDeadline(v); err == nil && !t.After(deadline) {
				return nil
			}
		}
		stamped := cur.DeepCopy()
		if stamped.Annotations == nil {
			stamped.Annotations = map[string]string{}
		}
		stamped.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = termination.FormatDeadline(deadline)
		err := c.deps.Client.Patch(ctx, stamped, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			var reader client.Reader = c.deps.Client
			if c.deps.APIReader != nil {
				reader = c.deps.APIReader
			}
			fresh := &karpv1.NodeClaim{}
			if gerr := reader.Get(ctx, client.ObjectKeyFromObject(nc), fresh); gerr != nil {
				return gerr
			}
			cur = fresh
		}
		return err
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("stamping the termination deadline of nodeclaim %s: %w", nc.Name, err))
	}
	return nil
}
