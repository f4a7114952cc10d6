package test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Builders for nodes as the disruption controller sees them (labels of the offering, do-not-disrupt,
// Consolidatable and Drifted conditions) and for the pods on them.

// Offering sets the labels of the offering the Node runs as: instance type, zone and capacity type.
func (b *NodeBuilder) Offering(instanceType, zone, capacityType string) *NodeBuilder {
	return b.Label(corev1.LabelInstanceTypeStable, instanceType).Label(corev1.LabelTopologyZone, zone).
		Label(karpv1.CapacityTypeLabelKey, capacityType)
}

// Annotation sets an annotation of the Node.
func (b *NodeBuilder) Annotation(key, value string) *NodeBuilder {
	if b.node.Annotations == nil {
		b.node.Annotations = map[string]string{}
	}
	b.node.Annotations[key] = value
	return b
}

// Consolidatable sets the NodeClaim's Consolidatable condition true at t (consolidateAfter has passed).
func (b *NodeClaimBuilder) Consolidatable(at time.Time) *NodeClaimBuilder {
	return b.Condition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, karpv1.ConditionTypeConsolidatable, at)
}

// Drifted sets the NodeClaim's Drifted condition true with reason at t.
func (b *NodeClaimBuilder) Drifted(reason string, at time.Time) *NodeClaimBuilder {
	return b.Condition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, reason, at)
}

// Label sets a label of the pod.
func (b *PodBuilder) Label(key, value string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[key] = value
	return b
}

// Annotation sets an annotation of the pod.
func (b *PodBuilder) Annotation(key, value string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[key] = value
	return b
}

// Running binds the pod to node and sets phase Running.
func (b *PodBuilder) Running(node string) *PodBuilder {
	return b.NodeName(node).Phase(corev1.PodRunning)
}
