package test

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Builders for the NodeClaim disruption signals (drift, consolidateAfter, expireAfter).

// Annotation sets an annotation of the NodeClaim.
func (b *NodeClaimBuilder) Annotation(key, value string) *NodeClaimBuilder {
	if b.nc.Annotations == nil {
		b.nc.Annotations = map[string]string{}
	}
	b.nc.Annotations[key] = value
	return b
}

// NodePoolHash sets the karpenter.sh/nodepool-hash and -hash-version annotations of the NodeClaim.
func (b *NodeClaimBuilder) NodePoolHash(hash, version string) *NodeClaimBuilder {
	return b.Annotation(karpv1.NodePoolHashAnnotationKey, hash).Annotation(karpv1.NodePoolHashVersionAnnotationKey, version)
}

// ExpireAfter sets spec.expireAfter ("720h" or "Never").
func (b *NodeClaimBuilder) ExpireAfter(d string) *NodeClaimBuilder {
	b.nc.Spec.ExpireAfter = karpv1.MustParseNillableDuration(d)
	return b
}

// CreatedAt sets metadata.creationTimestamp (the API server overrides it on create).
func (b *NodeClaimBuilder) CreatedAt(t time.Time) *NodeClaimBuilder {
	b.nc.CreationTimestamp = metav1.NewTime(t)
	return b
}

// NodeName sets status.nodeName.
func (b *NodeClaimBuilder) NodeName(name string) *NodeClaimBuilder {
	b.nc.Status.NodeName = name
	return b
}

// LastPodEventTime sets status.lastPodEventTime.
func (b *NodeClaimBuilder) LastPodEventTime(t time.Time) *NodeClaimBuilder {
	b.nc.Status.LastPodEventTime = metav1.NewTime(t)
	return b
}

// Condition sets a status condition with its last transition time.
func (b *NodeClaimBuilder) Condition(t string, status metav1.ConditionStatus, reason string, at time.Time) *NodeClaimBuilder {
	var kept []metav1.Condition
	for _, c := range b.nc.Status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	b.nc.Status.Conditions = append(kept, metav1.Condition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)})
	return b
}

// Launched marks the NodeClaim Launched at t.
func (b *NodeClaimBuilder) Launched(at time.Time) *NodeClaimBuilder {
	return b.Condition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, karpv1.ReasonLaunched, at)
}

// Initialized marks the NodeClaim Launched, Registered and Initialized at t.
func (b *NodeClaimBuilder) Initialized(at time.Time) *NodeClaimBuilder {
	return b.Launched(at).
		Condition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, karpv1.ReasonRegistered, at).
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, karpv1.ReasonInitialized, at)
}

// Annotation sets an annotation of the NodePool.
func (b *NodePoolBuilder) Annotation(key, value string) *NodePoolBuilder {
	if b.np.Annotations == nil {
		b.np.Annotations = map[string]string{}
	}
	b.np.Annotations[key] = value
	return b
}

// NodePoolHash sets the karpenter.sh/nodepool-hash and -hash-version annotations of the NodePool.
func (b *NodePoolBuilder) NodePoolHash(hash, version string) *NodePoolBuilder {
	return b.Annotation(karpv1.NodePoolHashAnnotationKey, hash).Annotation(karpv1.NodePoolHashVersionAnnotationKey, version)
}

// ConsolidateAfter sets spec.disruption.consolidateAfter ("30s" or "Never").
func (b *NodePoolBuilder) ConsolidateAfter(d string) *NodePoolBuilder {
	b.np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(d)
	return b
}
