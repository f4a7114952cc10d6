package termination

import (
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// NodeClaim condition types written while a NodeClaim terminates (Karpenter v1 names). InstanceTerminating is
// karpv1.ConditionTypeInstanceTerminating.
const (
	// ConditionTypeDrained is True once no evictable pod is left on the node (or the grace period ended).
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached is True once the node's VolumeAttachments are gone (or the grace period ended).
	ConditionTypeVolumesDetached = "VolumesDetached"
)

// NodeClaimDeadline returns when a deleting NodeClaim's terminationGracePeriod ends: the value of its
// karpenter.sh/nodeclaim-termination-timestamp annotation when present and valid, otherwise its deletion
// timestamp plus its terminationGracePeriod. It returns nil when the NodeClaim is not being deleted or has no
// terminationGracePeriod, and an error (alongside the computed deadline) when the annotation is malformed.
func NodeClaimDeadline(nc *karpv1.NodeClaim) (*time.Time, error) {
	computed := computedDeadline(nc)
	v, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
	if !ok {
		return computed, nil
	}
	t, err := ParseDeadline(v)
	if err != nil {
		return computed, err
	}
	return &t, nil
}

func computedDeadline(nc *karpv1.NodeClaim) *time.Time {
	if nc.DeletionTimestamp == nil || nc.Spec.TerminationGracePeriod == nil {
		return nil
	}
	d := nc.Spec.TerminationGracePeriod.Duration
	return Deadline(nc.DeletionTimestamp.Time, &d)
}
