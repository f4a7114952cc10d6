package lifecycle

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// Reasons of a False NodeRegistrationHealthy condition on a NodePool whose NodeClaims launched but did not
// register (a NodeClaim that did not launch gives its Launched reason instead).
const (
	ReasonRegistrationFailed  = "RegistrationFailed"
	MessageRegistrationFailed = "Nodes launched from this NodePool did not register"
)

// recordRegistration records whether the NodeClaim registered a Node in its NodePool's recent outcomes, and sets
// the NodePool's NodeRegistrationHealthy condition when they make it Healthy (True) or Unhealthy (False). Only
// NodeClaims the NodePool owns count. A failure to update the NodePool is returned; the outcome is recorded
// anyway.
func (c *Controller) recordRegistration(ctx context.Context, nc *karpv1.NodeClaim, registered bool) error {
	rh := c.deps.RegistrationHealth
	name := nc.NodePoolName()
	if rh == nil || name == "" {
		return nil
	}
	// One at a time, on the NodePool as this controller last wrote it when the cache is behind that write: the
	// registrations of a scale-out, 50 at once, each found the condition to set on the same cached NodePool, and
	// all but the first write were refused.
	c.poolMu.Lock()
	defer c.poolMu.Unlock()
	np := &karpv1.NodePool{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("getting nodepool %s: %w", name, err))
	}
	np, _ = c.poolWrites.Latest(np)
	owned := false
	for _, o := range nc.OwnerReferences {
		if o.Kind == "NodePool" && o.UID == np.UID {
			owned = true
		}
	}
	if !owned {
		return nil
	}
	stored := np.DeepCopy()
	cond := np.GetCondition(karpv1.ConditionTypeNodeRegistrationHealthy)
	switch status := rh.Record(np.UID, registered); {
	case status == deps.RegistrationHealthy && (cond == nil || cond.Status != metav1.ConditionTrue):
		np.SetTrue(karpv1.ConditionTypeNodeRegistrationHealthy, karpv1.ReasonRegistrationHealthy)
	case status == deps.RegistrationUnhealthy && (cond == nil || cond.Status != metav1.ConditionFalse):
		reason, msg := ReasonRegistrationFailed, MessageRegistrationFailed
		if l := nc.GetCondition(karpv1.ConditionTypeLaunched); l != nil && l.Status != metav1.ConditionTrue {
			reason, msg = l.Reason, l.Message
		}
		np.SetFalse(karpv1.ConditionTypeNodeRegistrationHealthy, reason, msg)
	default:
		return nil
	}
	// This condition only, tested to be as read: the NodePool counter's and readiness' writes meanwhile do not
	// make it fail.
	if err := deps.PatchNodePoolStatus(ctx, c.deps.Client, stored, np); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting %s on nodepool %s: %w", karpv1.ConditionTypeNodeRegistrationHealthy, name, err))
	}
	c.poolWrites.Wrote(np)
	return nil
}
