package test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeBuilder builds a Node for tests, e.g. the Node a kubelet would register for a launched NodeClaim.
type NodeBuilder struct{ node *corev1.Node }

// Node starts a Node with the given provider ID, 4 cpu / 8Gi / 110 pods capacity and no conditions.
func Node(name, providerID string) *NodeBuilder {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &NodeBuilder{node: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}}
}

// Label adds a label.
func (b *NodeBuilder) Label(key, value string) *NodeBuilder { b.node.Labels[key] = value; return b }

// Taint adds a taint.
func (b *NodeBuilder) Taint(t corev1.Taint) *NodeBuilder {
	b.node.Spec.Taints = append(b.node.Spec.Taints, t)
	return b
}

// Ready sets the Ready condition.
func (b *NodeBuilder) Ready(ready bool) *NodeBuilder {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	b.node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	return b
}

// Capacity sets one capacity and allocatable value.
func (b *NodeBuilder) Capacity(name corev1.ResourceName, q string) *NodeBuilder {
	b.node.Status.Capacity[name] = resource.MustParse(q)
	b.node.Status.Allocatable[name] = resource.MustParse(q)
	return b
}

// Obj returns the Node.
func (b *NodeBuilder) Obj() *corev1.Node { return b.node.DeepCopy() }
