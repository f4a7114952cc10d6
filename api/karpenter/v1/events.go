package v1

// Event reasons Dovetail emits with the same spelling, type and object as Karpenter v1.14/v1.15, so that
// alerts and dashboards written for Karpenter's events keep matching. docs/events.md lists each one with the
// object it is put on and when.
const (
	// Disruption.
	EventReasonDisruptionBlocked          = "DisruptionBlocked"
	EventReasonDisruptionLaunching        = "DisruptionLaunching"
	EventReasonDisruptionTerminating      = "DisruptionTerminating"
	EventReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	EventReasonUnconsolidatable           = "Unconsolidatable"
	EventReasonConsolidationCandidate     = "ConsolidationCandidate"
	EventReasonConsolidationRejected      = "ConsolidationRejected"
	EventReasonConsolidationApproved      = "ConsolidationApproved"

	// Provisioning.
	EventReasonFailedScheduling          = "FailedScheduling"
	EventReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
	EventReasonNominated                 = "Nominated"

	// Node repair.
	EventReasonNodeRepairBlocked = "NodeRepairBlocked"
	// Reboot repair (on the NodeClaim).
	EventReasonRebootObserved = "RebootObserved"
	EventReasonRebootFailed   = "RebootFailed"

	// Node termination.
	EventReasonDisrupted                      = "Disrupted"
	EventReasonEvicted                        = "Evicted"
	EventReasonFailedDraining                 = "FailedDraining"
	EventReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
	EventReasonAwaitingVolumeDetachment       = "AwaitingVolumeDetachment"

	// NodeClaim consistency and lifecycle.
	EventReasonFailedConsistencyCheck    = "FailedConsistencyCheck"
	EventReasonInsufficientCapacityError = "InsufficientCapacityError"
	EventReasonUnregisteredTaintMissing  = "UnregisteredTaintMissing"
	EventReasonNodeClassNotReady         = "NodeClassNotReady"

	// EC2NodeClass deletion (the AWS provider's).
	EventReasonWaitingOnNodeClaimTermination = "WaitingOnNodeClaimTermination"

	// AWS interruption (the AWS provider's events, on the NodeClaim and its Node).
	EventReasonSpotInterrupted                        = "SpotInterrupted"
	EventReasonSpotRebalanceRecommendation            = "SpotRebalanceRecommendation"
	EventReasonInstanceStopping                       = "InstanceStopping"
	EventReasonInstanceTerminating                    = "InstanceTerminating"
	EventReasonCapacityReservationInstanceInterrupted = "CapacityReservationInstanceInterrupted"
	EventReasonTerminatingOnInterruption              = "TerminatingOnInterruption"
)
