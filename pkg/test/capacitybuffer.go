package test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
)

// CapacityBufferBuilder builds a CapacityBuffer.
type CapacityBufferBuilder struct {
	cb autoscalingv1beta1.CapacityBuffer
}

// CapacityBuffer starts a buffer in namespace ns with a UID derived from its name.
func CapacityBuffer(ns, name string) *CapacityBufferBuilder {
	return &CapacityBufferBuilder{cb: autoscalingv1beta1.CapacityBuffer{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv1beta1.GroupVersion.String(), Kind: "CapacityBuffer"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("cb-" + name), Generation: 1},
	}}
}

// PodTemplate sets spec.podTemplateRef.
func (b *CapacityBufferBuilder) PodTemplate(name string) *CapacityBufferBuilder {
	b.cb.Spec.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: name}
	return b
}

// Scalable sets spec.scalableRef to an apps workload.
func (b *CapacityBufferBuilder) Scalable(kind, name string) *CapacityBufferBuilder {
	b.cb.Spec.ScalableRef = &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: kind, Name: name}
	return b
}

// Replicas sets spec.replicas.
func (b *CapacityBufferBuilder) Replicas(n int32) *CapacityBufferBuilder {
	b.cb.Spec.Replicas = &n
	return b
}

// Percentage sets spec.percentage.
func (b *CapacityBufferBuilder) Percentage(n int32) *CapacityBufferBuilder {
	b.cb.Spec.Percentage = &n
	return b
}

// Limit sets one entry of spec.limits.
func (b *CapacityBufferBuilder) Limit(name corev1.ResourceName, q string) *CapacityBufferBuilder {
	if b.cb.Spec.Limits == nil {
		b.cb.Spec.Limits = autoscalingv1beta1.Limits{}
	}
	b.cb.Spec.Limits[name] = resource.MustParse(q)
	return b
}

// Status sets the status.
func (b *CapacityBufferBuilder) Status(st autoscalingv1beta1.CapacityBufferStatus) *CapacityBufferBuilder {
	b.cb.Status = st
	return b
}

// Obj returns the buffer.
func (b *CapacityBufferBuilder) Obj() *autoscalingv1beta1.CapacityBuffer { return b.cb.DeepCopy() }

// PodTemplate returns a PodTemplate in namespace ns whose one container requests cpu and memory ("" for none).
func PodTemplate(ns, name, cpu, memory string) *corev1.PodTemplate {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		req[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return &corev1.PodTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PodTemplate"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "pause", Image: "registry.k8s.io/pause", Resources: corev1.ResourceRequirements{Requests: req},
			}}},
		},
	}
}
