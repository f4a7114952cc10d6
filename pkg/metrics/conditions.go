package metrics

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim group and kind, the values of the group and kind labels of the kind-labelled condition metrics.
const (
	nodeClaimGroup = "karpenter.sh"
	nodeClaimKind  = "NodeClaim"
)

// RecordNodeClaimConditions records the condition changes of one NodeClaim status write that succeeded: labels are
// the NodeClaim's (its karpenter.k8s.aws/ec2nodeclass and karpenter.sh/nodepool label the per-kind series), before
// the stored conditions, after the written ones, created the NodeClaim's creation time. For every condition whose
// status changed it counts a transition (type, new status, new reason) and observes how long the condition held
// its previous status (from the previous lastTransitionTime to the new one). A condition seen for the first time
// is taken to have been Unknown since the NodeClaim was created, which is how Karpenter's NodeClaims start, so
// that the first Launched=True observes the launch time under status="Unknown".
func (m *Metrics) RecordNodeClaimConditions(labels map[string]string, created time.Time, before, after []metav1.Condition) {
	extra := KindNodeClaim.spec().extraValues(labels)
	for i := range after {
		cur := &after[i]
		prevStatus, since := metav1.ConditionUnknown, created
		if prev := findCondition(before, cur.Type); prev != nil {
			if prev.Status == cur.Status {
				continue
			}
			prevStatus, since = prev.Status, prev.LastTransitionTime.Time
		} else if cur.Status == metav1.ConditionUnknown {
			// Unknown from the start: no change.
			continue
		}
		m.NodeClaimConditionTransitions.WithLabelValues(append([]string{cur.Type, string(cur.Status), cur.Reason}, extra...)...).Inc()
		m.ConditionTransitions.WithLabelValues(nodeClaimGroup, nodeClaimKind, cur.Type, string(cur.Status), cur.Reason).Inc()
		if since.IsZero() || cur.LastTransitionTime.IsZero() {
			continue
		}
		held := cur.LastTransitionTime.Sub(since).Seconds()
		if held < 0 {
			// Timestamps from different clocks (the API server's creation time, the controller's transition
			// time) may disagree by a little; never observe a negative time.
			held = 0
		}
		m.NodeClaimConditionDuration.WithLabelValues(append([]string{cur.Type, string(prevStatus), string(cur.Status)}, extra...)...).Observe(held)
		m.ConditionDuration.WithLabelValues(nodeClaimGroup, nodeClaimKind, cur.Type, string(prevStatus), string(cur.Status)).Observe(held)
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
