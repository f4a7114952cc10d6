package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// EC2NodeClass condition types. Ready (karpv1.ConditionTypeReady) is the root.
const (
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	// ConditionTypePlacementGroupReady is only part of readiness when spec.placementGroupSelector is set.
	ConditionTypePlacementGroupReady = "PlacementGroupReady"
)

// EC2NodeClass condition reasons.
const (
	ReasonSubnetsNotFound        = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound = "SecurityGroupsNotFound"
	ReasonAMINotFound            = "AMINotFound"
	ReasonInstanceProfileError   = "InstanceProfileError"
	ReasonCapacityReservationErr = "CapacityReservationError"
	ReasonUnauthorized           = "Unauthorized"
	ReasonDependenciesNotReady   = "DependenciesNotReady"
)

// ReadinessConditions are the conditions whose conjunction is the EC2NodeClass's Ready condition.
func (in *EC2NodeClass) ReadinessConditions() []string {
	conds := []string{
		ConditionTypeSubnetsReady,
		ConditionTypeSecurityGroupsReady,
		ConditionTypeAMIsReady,
		ConditionTypeInstanceProfileReady,
		ConditionTypeCapacityReservationsReady,
		ConditionTypeValidationSucceeded,
	}
	if in.Spec.PlacementGroupSelector != nil {
		conds = append(conds, ConditionTypePlacementGroupReady)
	}
	return conds
}

// StatusConditions returns the EC2NodeClass's conditions.
func (in *EC2NodeClass) StatusConditions() []metav1.Condition { return in.Status.Conditions }

// GetCondition returns the condition of type t, or nil.
func (in *EC2NodeClass) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// IsTrue reports whether the condition of type t is True.
func (in *EC2NodeClass) IsTrue(t string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, t)
}

// SetCondition sets a condition with the EC2NodeClass's generation as observedGeneration and recomputes
// the root Ready condition. It returns whether the conditions changed.
func (in *EC2NodeClass) SetCondition(t string, status metav1.ConditionStatus, reason, message string) bool {
	changed := meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	})
	if t == karpv1.ConditionTypeReady {
		return changed
	}
	ready := karpv1.ComputeReady(in.Status.Conditions, in.Generation, in.ReadinessConditions()...)
	return meta.SetStatusCondition(&in.Status.Conditions, ready) || changed
}

// SetTrue sets condition t to True with the given reason.
func (in *EC2NodeClass) SetTrue(t, reason string) bool {
	return in.SetCondition(t, metav1.ConditionTrue, reason, "")
}

// SetFalse sets condition t to False with reason and message.
func (in *EC2NodeClass) SetFalse(t, reason, message string) bool {
	return in.SetCondition(t, metav1.ConditionFalse, reason, message)
}
