package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/repair"
)

// commitReboot hands a reboot command's node to the reboot controller (pkg/controllers/nodeclaim/reboot): the
// NodeClaim gets karpenter.sh/reboot-termination-grace-period (the repair's drain bound, else the NodeClaim's
// terminationGracePeriod) and the condition Rebooting=True with reason RebootRequested. The reboot is remembered
// for repair.RebootsBeforeReplacement. A NodeClaim already rebooting or being deleted is left alone.
func (c *Controller) commitReboot(ctx context.Context, st *state, cmd *core.Command) error {
	cand := cmd.Candidates[0]
	nc := &karpv1.NodeClaim{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: cand.NodeClaim}, nc); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("getting nodeclaim %s: %w", cand.NodeClaim, err))
	}
	if nc.IsTrue(karpv1.ConditionTypeRebooting) || !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	var bound *time.Duration
	if cand.Repair != nil && cand.Repair.DrainBound != nil {
		bound = cand.Repair.DrainBound
	} else if nc.Spec.TerminationGracePeriod != nil {
		bound = &nc.Spec.TerminationGracePeriod.Duration
	}
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	if bound != nil {
		nc.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey] = bound.String()
	} else {
		delete(nc.Annotations, karpv1.RebootTerminationGracePeriodAnnotationKey)
	}
	if stored.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey] != nc.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey] {
		if err := c.deps.Client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("annotating nodeclaim %s for a reboot: %w", nc.Name, err)
		}
	}
	stored = nc.DeepCopy()
	condition := ""
	if cand.Repair != nil {
		condition = cand.Repair.Condition
	}
	nc.SetCondition(karpv1.ConditionTypeRebooting, metav1.ConditionTrue, karpv1.RebootReasonRequested, "rebooting for "+condition+": "+cmd.Message())
	if err := c.deps.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("asking for the reboot of nodeclaim %s: %w", nc.Name, err)
	}
	c.reboots[nc.UID] = append(c.reboots[nc.UID], st.Now)
	reason := strings.ToLower(string(cmd.Reason))
	c.deps.Metrics.DisruptionDecisions.WithLabelValues(cmd.Decision, reason, "").Inc()
	c.deps.Metrics.DisruptionDecisionsByNodePool.WithLabelValues(cmd.Decision, reason, "", cand.NodePool).Inc()
	// As Karpenter v1.15, a reboot counts as a disruption of the NodeClaim (its pods are drained), though the
	// NodeClaim stays.
	deps.CountDisrupted(ctx, c.deps, nc, reason, "")
	if condition != "" {
		c.deps.Metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues(repair.ConditionLabel(condition), nc.NodePoolName(),
			nc.Labels[karpv1.CapacityTypeLabelKey], nc.Status.ImageID).Inc()
	}
	log.FromContext(ctx).Info(LogStarted, "reason", cmd.Reason, "decision", cmd.Decision, "nodeclaims", []string{nc.Name},
		"node", cand.Node, "condition", condition, "termination-grace-period", nc.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey])
	return nil
}

// forgetReboots drops the reboots asked for more than repair.RebootHistoryWindow ago.
func (c *Controller) forgetReboots(now time.Time) {
	for uid, at := range c.reboots {
		kept := at[:0]
		for _, t := range at {
			if now.Sub(t) < repair.RebootHistoryWindow {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			delete(c.reboots, uid)
		} else {
			c.reboots[uid] = kept
		}
	}
}
