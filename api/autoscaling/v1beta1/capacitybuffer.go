package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBuffer asks the autoscaler to keep spare room in the cluster for a number of pods of one shape, so
// that pods arriving later start without waiting for a new node. The room is held by virtual (placeholder) pods
// that only exist inside the autoscaler's scheduling simulation.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,categories=autoscaling,shortName=cb
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="How the buffer's room is provided"
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="PodTemplate the buffer's pods are built from"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="Number of buffer pods kept room for"
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="Condition types"
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="Condition statuses"
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="Condition reasons"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the buffer was created"
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says what room to keep.
	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// Status says what the autoscaler resolved and whether the room exists.
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// CapacityBufferSpec is the desired spare room: the shape of one buffer pod (a "chunk") and how many of them.
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="If podTemplateRef is set, replicas or limits must also be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="You must define either PodTemplateRef or ScalableRef, but not both"
type CapacityBufferSpec struct {
	// ProvisioningStrategy is how the room is provided. "buffer.x-k8s.io/active-capacity" (the default, and the
	// only one Dovetail acts on) keeps nodes with free room for the buffer's pods.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// PodTemplateRef names a PodTemplate in the buffer's namespace giving the shape of one buffer pod. Set this
	// or ScalableRef, not both.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// ScalableRef names a workload with a scale subresource (Deployment, StatefulSet, ReplicaSet) whose pod
	// template gives the buffer pod's shape and whose replica count Percentage applies to. Set this or
	// PodTemplateRef, not both.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// Replicas is the number of buffer pods to keep room for.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Percentage sizes the buffer as a percentage of ScalableRef's replicas, rounded up, at least 1 when the
	// workload has replicas. Only used with ScalableRef. With Replicas as well, the larger count is used.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Limits caps the buffer's total requests (e.g. cpu, memory): the count is at most what fits in them. With
	// neither Replicas nor Percentage, the buffer holds as many pods as fit in the limits.
	// +optional
	Limits Limits `json:"limits,omitempty"`
}

// Limits are the ceilings on a buffer's total resource requests.
type Limits corev1.ResourceList

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// Name is the referent's name.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// ScalableRef names a workload in the buffer's namespace by API group, kind and name.
type ScalableRef struct {
	// APIGroup is the referent's API group; empty is the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind is the referent's kind.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
	// Name is the referent's name.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// CapacityBufferStatus is what the autoscaler last resolved for the buffer.
type CapacityBufferStatus struct {
	// PodTemplateRef is the PodTemplate the buffer's pods were built from (set for podTemplateRef buffers).
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is the number of buffer pods the autoscaler keeps room for.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the generation of the PodTemplate that was used.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// Conditions: ReadyForProvisioning (the shape and count were resolved) and Provisioning (the room exists on
	// current nodes, or new capacity is being launched for it).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningStrategy is the strategy the autoscaler applied.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}
