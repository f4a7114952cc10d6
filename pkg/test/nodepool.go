package test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// NodePoolBuilder builds a NodePool for tests: test.NodePool("default").Limit("cpu", "10").Obj().
type NodePoolBuilder struct{ np *karpv1.NodePool }

// NodePool starts a NodePool referencing EC2NodeClass "default", with no requirements.
func NodePool(name string) *NodePoolBuilder {
	return &NodePoolBuilder{np: &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		}}},
	}}
}

// NodeClass sets the node class name.
func (b *NodePoolBuilder) NodeClass(name string) *NodePoolBuilder {
	b.np.Spec.Template.Spec.NodeClassRef.Name = name
	return b
}

// Requirement adds a template requirement.
func (b *NodePoolBuilder) Requirement(key string, op corev1.NodeSelectorOperator, values ...string) *NodePoolBuilder {
	b.np.Spec.Template.Spec.Requirements = append(b.np.Spec.Template.Spec.Requirements, karpv1.NewRequirement(key, op, values...))
	return b
}

// Label adds a template label.
func (b *NodePoolBuilder) Label(key, value string) *NodePoolBuilder {
	if b.np.Spec.Template.Labels == nil {
		b.np.Spec.Template.Labels = map[string]string{}
	}
	b.np.Spec.Template.Labels[key] = value
	return b
}

// Taint adds a template taint.
func (b *NodePoolBuilder) Taint(key, value string, effect corev1.TaintEffect) *NodePoolBuilder {
	b.np.Spec.Template.Spec.Taints = append(b.np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// StartupTaint adds a template startup taint.
func (b *NodePoolBuilder) StartupTaint(key, value string, effect corev1.TaintEffect) *NodePoolBuilder {
	b.np.Spec.Template.Spec.StartupTaints = append(b.np.Spec.Template.Spec.StartupTaints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Limit sets a limit, e.g. Limit("cpu", "10").
func (b *NodePoolBuilder) Limit(name corev1.ResourceName, q string) *NodePoolBuilder {
	if b.np.Spec.Limits == nil {
		b.np.Spec.Limits = karpv1.Limits{}
	}
	b.np.Spec.Limits[name] = resource.MustParse(q)
	return b
}

// Weight sets the weight.
func (b *NodePoolBuilder) Weight(w int32) *NodePoolBuilder { b.np.Spec.Weight = &w; return b }

// ExpireAfter sets expireAfter ("720h" or "Never").
func (b *NodePoolBuilder) ExpireAfter(d string) *NodePoolBuilder {
	b.np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration(d)
	return b
}

// Obj returns the NodePool.
func (b *NodePoolBuilder) Obj() *karpv1.NodePool { return b.np.DeepCopy() }

// Replicas makes the NodePool static with n replicas.
func (b *NodePoolBuilder) Replicas(n int64) *NodePoolBuilder { b.np.Spec.Replicas = &n; return b }
