package capacitybuffer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
)

// Strategy is the buffer's provisioning strategy, the default when unset.
func Strategy(cb *autoscalingv1beta1.CapacityBuffer) string {
	if cb.Spec.ProvisioningStrategy == nil || *cb.Spec.ProvisioningStrategy == "" {
		return autoscalingv1beta1.ActiveCapacityStrategy
	}
	return *cb.Spec.ProvisioningStrategy
}

// Resolved returns the status of a buffer whose reference resolved to src: replicas, the PodTemplate observed
// (for podTemplateRef buffers), the strategy, and ReadyForProvisioning True. A buffer with a strategy other than
// active-capacity is not acted on: ReadyForProvisioning False, reason UnsupportedProvisioningStrategy.
func Resolved(cb *autoscalingv1beta1.CapacityBuffer, src Source, now metav1.Time) autoscalingv1beta1.CapacityBufferStatus {
	st := *cb.Status.DeepCopy()
	strategy := Strategy(cb)
	st.ProvisioningStrategy = &strategy
	if strategy != autoscalingv1beta1.ActiveCapacityStrategy {
		st.Replicas, st.PodTemplateRef, st.PodTemplateGeneration = nil, nil, nil
		setCondition(&st, cb.Generation, now, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse,
			autoscalingv1beta1.ReasonUnsupportedStrategy,
			fmt.Sprintf("provisioningStrategy %q is not supported; only %q is", strategy, autoscalingv1beta1.ActiveCapacityStrategy))
		return st
	}
	replicas := Replicas(cb.Spec, src)
	st.Replicas = &replicas
	if src.PodTemplateName != "" {
		gen := src.PodTemplateGeneration
		st.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: src.PodTemplateName}
		st.PodTemplateGeneration = &gen
	} else {
		st.PodTemplateRef, st.PodTemplateGeneration = nil, nil
	}
	setCondition(&st, cb.Generation, now, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue,
		autoscalingv1beta1.ReasonResolved, fmt.Sprintf("Pod template resolved; buffer keeps room for %d pods", replicas))
	return st
}

// Unresolved returns the status of a buffer whose reference could not be resolved: ReadyForProvisioning False
// with reason and message, and no replicas (the buffer holds no room until it resolves).
func Unresolved(cb *autoscalingv1beta1.CapacityBuffer, reason, message string, now metav1.Time) autoscalingv1beta1.CapacityBufferStatus {
	st := *cb.Status.DeepCopy()
	strategy := Strategy(cb)
	st.ProvisioningStrategy = &strategy
	st.Replicas, st.PodTemplateRef, st.PodTemplateGeneration = nil, nil, nil
	setCondition(&st, cb.Generation, now, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, reason, message)
	return st
}

// Ready reports whether the buffer should hold room now: ReadyForProvisioning True and replicas > 0.
func Ready(cb *autoscalingv1beta1.CapacityBuffer) bool {
	return meta.IsStatusConditionTrue(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) &&
		cb.Status.Replicas != nil && *cb.Status.Replicas > 0
}

// Placement counts where a provisioning pass put a buffer's virtual pods.
type Placement struct {
	// Existing went to room on nodes and NodeClaims that exist; New to NodeClaims the pass creates; Failed fit
	// nowhere.
	Existing, New, Failed int
	// FailedReason is why one of the failed pods fit nowhere.
	FailedReason string
}

// Provisioning returns the buffer's Provisioning condition after a pass: True (FitsExistingCapacity) when every
// buffer pod has room on existing capacity, False while new capacity is launched for some (RequiresNewCapacity)
// or cannot be, or when the buffer is not ready or empty. ok is false when the pass says nothing new about the
// buffer (it is ready but none of its pods were placed).
func Provisioning(cb *autoscalingv1beta1.CapacityBuffer, p Placement) (metav1.Condition, bool) {
	c := metav1.Condition{Type: autoscalingv1beta1.ConditionProvisioning, ObservedGeneration: cb.Generation}
	switch {
	case !meta.IsStatusConditionTrue(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, autoscalingv1beta1.ReasonNotReadyForProvisioning, "Buffer is not ReadyForProvisioning"
	case cb.Status.Replicas == nil || *cb.Status.Replicas == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, autoscalingv1beta1.ReasonBufferEmpty, "Buffer has zero replicas"
	case p.New > 0 || p.Failed > 0:
		c.Status, c.Reason = metav1.ConditionFalse, autoscalingv1beta1.ReasonRequiresNewCapacity
		c.Message = fmt.Sprintf("%d of %d buffer pods need new capacity, %d fit nowhere", p.New, *cb.Status.Replicas, p.Failed)
		if p.FailedReason != "" {
			c.Message += ": " + p.FailedReason
		}
	case p.Existing > 0:
		c.Status, c.Reason = metav1.ConditionTrue, autoscalingv1beta1.ReasonFitsExistingCapacity
		c.Message = fmt.Sprintf("All %d buffer pods fit on existing capacity", p.Existing)
	default:
		return c, false
	}
	return c, true
}

// SetProvisioning sets the condition on a copy of the status and reports whether anything but the transition
// time changed.
func SetProvisioning(cb *autoscalingv1beta1.CapacityBuffer, c metav1.Condition, now metav1.Time) (autoscalingv1beta1.CapacityBufferStatus, bool) {
	st := *cb.Status.DeepCopy()
	old := meta.FindStatusCondition(st.Conditions, c.Type)
	if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
		return st, false
	}
	setCondition(&st, c.ObservedGeneration, now, c.Type, c.Status, c.Reason, c.Message)
	return st, true
}

func setCondition(st *autoscalingv1beta1.CapacityBufferStatus, gen int64, now metav1.Time, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen, LastTransitionTime: now,
	})
}
