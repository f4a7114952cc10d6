package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusConditions returns the NodeClaim's conditions.
func (in *NodeClaim) StatusConditions() []metav1.Condition { return in.Status.Conditions }

// GetCondition returns the condition of type t, or nil.
func (in *NodeClaim) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// IsTrue reports whether the condition of type t is True.
func (in *NodeClaim) IsTrue(t string) bool { return conditionTrue(in.Status.Conditions, t) }

// SetCondition sets a condition (status, reason, message) with the NodeClaim's generation as
// observedGeneration and recomputes the root Ready condition from Launched, Registered and Initialized.
// It returns whether the conditions changed.
func (in *NodeClaim) SetCondition(t string, status metav1.ConditionStatus, reason, message string) bool {
	return setCondition(&in.Status.Conditions, in.Generation,
		metav1.Condition{Type: t, Status: status, Reason: reason, Message: message}, NodeClaimReadinessConditions())
}

// SetTrue sets condition t to True with the given reason.
func (in *NodeClaim) SetTrue(t, reason string) bool {
	return in.SetCondition(t, metav1.ConditionTrue, reason, "")
}

// SetFalse sets condition t to False with reason and message.
func (in *NodeClaim) SetFalse(t, reason, message string) bool {
	return in.SetCondition(t, metav1.ConditionFalse, reason, message)
}

// ClearCondition removes condition t (e.g. Drifted once resolved) and recomputes Ready.
func (in *NodeClaim) ClearCondition(t string) bool {
	changed := meta.RemoveStatusCondition(&in.Status.Conditions, t)
	if t == ConditionTypeReady {
		return changed
	}
	return meta.SetStatusCondition(&in.Status.Conditions,
		ComputeReady(in.Status.Conditions, in.Generation, NodeClaimReadinessConditions()...)) || changed
}

// StatusConditions returns the NodePool's conditions.
func (in *NodePool) StatusConditions() []metav1.Condition { return in.Status.Conditions }

// GetCondition returns the condition of type t, or nil.
func (in *NodePool) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// IsTrue reports whether the condition of type t is True.
func (in *NodePool) IsTrue(t string) bool { return conditionTrue(in.Status.Conditions, t) }

// SetCondition sets a condition with the NodePool's generation as observedGeneration and recomputes the
// root Ready condition from ValidationSucceeded and NodeClassReady. It returns whether anything changed.
func (in *NodePool) SetCondition(t string, status metav1.ConditionStatus, reason, message string) bool {
	return setCondition(&in.Status.Conditions, in.Generation,
		metav1.Condition{Type: t, Status: status, Reason: reason, Message: message}, NodePoolReadinessConditions())
}

// SetTrue sets condition t to True with the given reason.
func (in *NodePool) SetTrue(t, reason string) bool {
	return in.SetCondition(t, metav1.ConditionTrue, reason, "")
}

// SetFalse sets condition t to False with reason and message.
func (in *NodePool) SetFalse(t, reason, message string) bool {
	return in.SetCondition(t, metav1.ConditionFalse, reason, message)
}
