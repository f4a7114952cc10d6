package termination

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// recordTerminated records a NodeClaim whose finalizer was removed: the count, the time since its deletion was
// requested and, when Dovetail asked the cloud to terminate its instance (condition InstanceTerminating), the
// time from that request until the cloud no longer reported the instance.
func (c *Controller) recordTerminated(nc *karpv1.NodeClaim) {
	pool := nc.Labels[karpv1.NodePoolLabelKey]
	c.metrics.CountNodeClaimTerminated(nc)
	if nc.DeletionTimestamp != nil {
		c.metrics.NodeClaimsTerminationDuration.WithLabelValues(pool).Observe(seconds(c.clock.Since(nc.DeletionTimestamp.Time).Seconds()))
	}
	if cond := nc.GetCondition(karpv1.ConditionTypeInstanceTerminating); cond != nil && cond.Status == metav1.ConditionTrue {
		c.metrics.NodeClaimsInstanceTerminationDuration.WithLabelValues(pool).Observe(seconds(c.clock.Since(cond.LastTransitionTime.Time).Seconds()))
	}
}

// seconds clamps a duration measured across clocks (API server timestamps, the controller's clock) at zero.
func seconds(s float64) float64 { return max(s, 0) }
