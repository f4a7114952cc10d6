package test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// NodeClaimBuilder builds a NodeClaim for tests.
type NodeClaimBuilder struct{ nc *karpv1.NodeClaim }

// NodeClaim starts a NodeClaim of NodePool nodePool referencing EC2NodeClass "default".
func NodeClaim(name, nodePool string) *NodeClaimBuilder {
	return &NodeClaimBuilder{nc: &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: nodePool}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}}
}

// Requirement adds a requirement.
func (b *NodeClaimBuilder) Requirement(key string, op corev1.NodeSelectorOperator, values ...string) *NodeClaimBuilder {
	b.nc.Spec.Requirements = append(b.nc.Spec.Requirements, karpv1.NewRequirement(key, op, values...))
	return b
}

// Taint adds a taint.
func (b *NodeClaimBuilder) Taint(key, value string, effect corev1.TaintEffect) *NodeClaimBuilder {
	b.nc.Spec.Taints = append(b.nc.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// StartupTaint adds a startup taint.
func (b *NodeClaimBuilder) StartupTaint(key, value string, effect corev1.TaintEffect) *NodeClaimBuilder {
	b.nc.Spec.StartupTaints = append(b.nc.Spec.StartupTaints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Requests sets spec.resources.requests.
func (b *NodeClaimBuilder) Requests(r corev1.ResourceList) *NodeClaimBuilder {
	b.nc.Spec.Resources.Requests = r
	return b
}

// Label adds a label.
func (b *NodeClaimBuilder) Label(key, value string) *NodeClaimBuilder {
	b.nc.Labels[key] = value
	return b
}

// Finalizer adds a finalizer.
func (b *NodeClaimBuilder) Finalizer(f string) *NodeClaimBuilder {
	b.nc.Finalizers = append(b.nc.Finalizers, f)
	return b
}

// ProviderID sets status.providerID.
func (b *NodeClaimBuilder) ProviderID(id string) *NodeClaimBuilder {
	b.nc.Status.ProviderID = id
	return b
}

// Obj returns the NodeClaim.
func (b *NodeClaimBuilder) Obj() *karpv1.NodeClaim { return b.nc.DeepCopy() }
