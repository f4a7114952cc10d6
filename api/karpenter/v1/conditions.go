package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionTypeReady is the root condition of every kind: true when all of the kind's readiness conditions
// are true.
const ConditionTypeReady = "Ready"

// NodeClaim condition types.
const (
	ConditionTypeLaunched             = "Launched"
	ConditionTypeRegistered           = "Registered"
	ConditionTypeInitialized          = "Initialized"
	ConditionTypeDrifted              = "Drifted"
	ConditionTypeConsolidatable       = "Consolidatable"
	ConditionTypeInstanceTerminating  = "InstanceTerminating"
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	ConditionTypeDisruptionReason     = "DisruptionReason"
	// ConditionTypeRebooting is true from the moment node repair asks for a node to be rebooted in place until the
	// reboot succeeds or fails (Karpenter v1.15, the AWS gate RebootForRepair); its reason is the reboot's phase.
	ConditionTypeRebooting = "Rebooting"
)

// Reasons of the Rebooting condition, Karpenter v1.15's: RebootRequested and RebootIssued while it is true,
// RebootSucceeded or RebootFailed once it is false.
const (
	RebootReasonRequested = "RebootRequested"
	RebootReasonIssued    = "RebootIssued"
	RebootReasonSucceeded = "RebootSucceeded"
	RebootReasonFailed    = "RebootFailed"
	// RebootReasonRebooting is the reason of the Initialized condition, Unknown while the node reboots.
	RebootReasonRebooting = "Rebooting"
)

// NodePool condition types.
const (
	ConditionTypeValidationSucceeded     = "ValidationSucceeded"
	ConditionTypeNodeClassReady          = "NodeClassReady"
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
)

// Condition reasons (CamelCase) shared by controllers.
const (
	// ReasonReady and ReasonNotReady are used on the root Ready condition.
	ReasonReady    = "Ready"
	ReasonNotReady = "NotReady"
	// ReasonUnknown is used while a dependent condition has not been evaluated yet.
	ReasonUnknown = "AwaitingReconciliation"

	ReasonLaunched             = "Launched"
	ReasonLaunchFailed         = "LaunchFailed"
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonNodeClassNotReady    = "NodeClassNotReady"
	ReasonRegistered           = "Registered"
	ReasonNodeNotFound         = "NodeNotFound"
	ReasonRegistrationTimeout  = "RegistrationTimeout"
	ReasonInitialized          = "Initialized"
	ReasonNodeNotReady         = "NodeNotReady"
	ReasonStartupTaintsExist   = "StartupTaintsExist"
	ReasonResourcesNotReady    = "ResourcesNotRegistered"
	ReasonInstanceTerminating  = "InstanceTerminating"
	ReasonConsistentStateFound = "ConsistentStateFound"
	ReasonConsistencyCheck     = "ConsistencyCheckFailed"
	ReasonValidationSucceeded  = "ValidationSucceeded"
	ReasonValidationFailed     = "ValidationFailed"
	ReasonNodeClassReady       = "NodeClassReady"
	ReasonNodeClassNotFound    = "NodeClassNotFound"
	ReasonRegistrationHealthy  = "NodeRegistrationHealthy"

	// Drift reasons, the Reason of a true Drifted condition, spelled as Karpenter spells them. The first three
	// are found by the NodeClaim disruption controller, the others by the AWS cloud provider.
	ReasonNodePoolDrifted          = "NodePoolDrifted"
	ReasonRequirementsDrifted      = "RequirementsDrifted"
	ReasonInstanceTypeNotFound     = "InstanceTypeNotFound"
	ReasonNodeClassDrift           = "NodeClassDrift"
	ReasonAMIDrift                 = "AMIDrift"
	ReasonSubnetDrift              = "SubnetDrift"
	ReasonSecurityGroupDrift       = "SecurityGroupDrift"
	ReasonCapacityReservationDrift = "CapacityReservationDrift"
	ReasonPlacementGroupDrift      = "PlacementGroupDrift"

	// Disruption reasons, the Reason of the DisruptionReason condition.
	ReasonDisruptionDrifted       = "Drifted"
	ReasonDisruptionUnderutilized = "Underutilized"
	ReasonDisruptionEmpty         = "Empty"
	ReasonDisruptionExpired       = "Expired"
)

// NodeClaimReadinessConditions are the NodeClaim conditions whose conjunction is Ready.
func NodeClaimReadinessConditions() []string {
	return []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}
}

// NodePoolReadinessConditions are the NodePool conditions whose conjunction is Ready.
func NodePoolReadinessConditions() []string {
	return []string{ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady}
}

// ComputeReady derives the root Ready condition from the dependent condition types: True when all are True,
// False (with the first false condition's reason and message) when any is False, Unknown otherwise.
// The result carries observedGeneration and is meant for meta.SetStatusCondition.
func ComputeReady(conditions []metav1.Condition, observedGeneration int64, dependents ...string) metav1.Condition {
	ready := metav1.Condition{
		Type:               ConditionTypeReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonReady,
		Message:            "",
		ObservedGeneration: observedGeneration,
	}
	var unknown *metav1.Condition
	for _, t := range dependents {
		c := meta.FindStatusCondition(conditions, t)
		switch {
		case c == nil:
			if unknown == nil {
				unknown = &metav1.Condition{Type: t, Reason: ReasonUnknown, Message: "condition " + t + " not yet evaluated"}
			}
		case c.Status == metav1.ConditionFalse:
			ready.Status = metav1.ConditionFalse
			ready.Reason = c.Reason
			if ready.Reason == "" {
				ready.Reason = ReasonNotReady
			}
			ready.Message = t + ": " + c.Message
			return ready
		case c.Status != metav1.ConditionTrue:
			if unknown == nil {
				unknown = c
			}
		}
	}
	if unknown != nil {
		ready.Status = metav1.ConditionUnknown
		ready.Reason = ReasonUnknown
		if unknown.Reason != "" {
			ready.Reason = unknown.Reason
		}
		ready.Message = unknown.Type + ": " + unknown.Message
	}
	return ready
}

// setCondition sets a condition with observedGeneration, then recomputes Ready from dependents. It returns
// whether anything changed.
func setCondition(conds *[]metav1.Condition, generation int64, c metav1.Condition, dependents []string) bool {
	c.ObservedGeneration = generation
	changed := meta.SetStatusCondition(conds, c)
	if c.Type == ConditionTypeReady || len(dependents) == 0 {
		return changed
	}
	return meta.SetStatusCondition(conds, ComputeReady(*conds, generation, dependents...)) || changed
}

// conditionTrue reports whether the condition type is present and True.
func conditionTrue(conds []metav1.Condition, t string) bool {
	return meta.IsStatusConditionTrue(conds, t)
}
