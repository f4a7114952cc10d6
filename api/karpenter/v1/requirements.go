package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Numeric requirement operators Karpenter v1.14 adds to the Kubernetes ones (Gt, Lt): the label's integer
// value is at least (Gte) or at most (Lte) the requirement's single value. NodePool and NodeClaim requirements
// accept them; pod node affinity does not.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NewRequirement returns a requirement without minValues.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) NodeSelectorRequirementWithMinValues {
	return NodeSelectorRequirementWithMinValues{
		NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values},
	}
}

// RequirementsFor returns the requirements of reqs whose key is key, in order.
func RequirementsFor(reqs []NodeSelectorRequirementWithMinValues, key string) []NodeSelectorRequirementWithMinValues {
	var out []NodeSelectorRequirementWithMinValues
	for _, r := range reqs {
		if r.Key == key {
			out = append(out, r)
		}
	}
	return out
}

// NodeSelectorRequirements drops minValues and returns plain node selector requirements.
func NodeSelectorRequirements(reqs []NodeSelectorRequirementWithMinValues) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.NodeSelectorRequirement)
	}
	return out
}

// HasMinValues reports whether any requirement sets minValues.
func HasMinValues(reqs []NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		if r.MinValues != nil {
			return true
		}
	}
	return false
}

// GroupKind returns the group and kind the reference points at.
func (r *NodeClassReference) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// Requirements returns the requirements of the NodePool's template.
func (in *NodePool) Requirements() []NodeSelectorRequirementWithMinValues {
	return in.Spec.Template.Spec.Requirements
}

// RequirementsFor returns the template requirements whose key is key.
func (in *NodePool) RequirementsFor(key string) []NodeSelectorRequirementWithMinValues {
	return RequirementsFor(in.Spec.Template.Spec.Requirements, key)
}

// NodeClassRef returns the NodePool's node class reference (nil if unset).
func (in *NodePool) NodeClassRef() *NodeClassReference { return in.Spec.Template.Spec.NodeClassRef }

// WeightOrZero returns the NodePool's weight, 0 when unset.
func (in *NodePool) WeightOrZero() int32 {
	if in.Spec.Weight == nil {
		return 0
	}
	return *in.Spec.Weight
}

// IsStatic reports whether the NodePool has spec.replicas (static capacity).
func (in *NodePool) IsStatic() bool { return in.Spec.Replicas != nil }

// NodePoolName returns the value of the karpenter.sh/nodepool label of the NodeClaim ("" if unset).
func (in *NodeClaim) NodePoolName() string { return in.Labels[NodePoolLabelKey] }
