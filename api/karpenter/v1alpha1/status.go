package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// ConditionTypeValidationSucceeded is true when the overlay is applied: its requirements are valid at runtime
// and it conflicts with no other overlay (Karpenter's condition type). Ready follows it.
const ConditionTypeValidationSucceeded = "ValidationSucceeded"

// Reasons of a false ValidationSucceeded condition.
const (
	// ReasonConflict: an overlay of the same weight already sets the price of an offering or a resource of an
	// instance type this overlay also sets (Karpenter's reason).
	ReasonConflict = "Conflict"
	// ReasonRuntimeValidation: the requirements are refused at runtime (Karpenter's reason).
	ReasonRuntimeValidation = "RuntimeValidation"
	// ReasonFeatureGateDisabled: FEATURE_GATES has NodeOverlay=false, so no overlay is applied.
	ReasonFeatureGateDisabled = "FeatureGateDisabled"
)

// StatusConditions returns the overlay's conditions.
func (in *NodeOverlay) StatusConditions() []metav1.Condition { return in.Status.Conditions }

// GetCondition returns the condition of type t, or nil.
func (in *NodeOverlay) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// SetValidation sets ValidationSucceeded (True when reason is empty, else False with reason and message) with
// the overlay's generation, and recomputes Ready from it. It returns whether the conditions changed.
func (in *NodeOverlay) SetValidation(reason, message string) bool {
	c := metav1.Condition{Type: ConditionTypeValidationSucceeded, Status: metav1.ConditionTrue,
		Reason: ConditionTypeValidationSucceeded, ObservedGeneration: in.Generation}
	if reason != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, message
	}
	changed := meta.SetStatusCondition(&in.Status.Conditions, c)
	ready := karpv1.ComputeReady(in.Status.Conditions, in.Generation, ConditionTypeValidationSucceeded)
	return meta.SetStatusCondition(&in.Status.Conditions, ready) || changed
}
