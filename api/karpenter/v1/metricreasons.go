package v1

// Values of the reason label of karpenter_nodeclaims_disrupted_total (and of karpenter_nodeclaims_created_total for
// MetricReasonProvisioned), spelled as Karpenter v1.14/v1.15 spells them. Voluntary disruption uses the lowercased
// DisruptionReason (drifted, underutilized, empty).
const (
	MetricReasonProvisioned          = "provisioned"
	MetricReasonExpired              = "expired"
	MetricReasonUnhealthy            = "unhealthy"
	MetricReasonGarbageCollected     = "garbage_collected"
	MetricReasonInsufficientCapacity = "insufficient_capacity"
	MetricReasonNodeClassNotReady    = "nodeclass_not_ready"
	MetricReasonRegistrationTimeout  = "registration_timeout"
	MetricReasonLaunchTimeout        = "launch_timeout"

	// Interruption message kinds (the AWS provider's).
	MetricReasonSpotInterrupted                = "spot_interrupted"
	MetricReasonRebalanceRecommendation        = "rebalance_recommendation"
	MetricReasonScheduledChange                = "scheduled_change"
	MetricReasonInstanceStopped                = "instance_stopped"
	MetricReasonInstanceTerminated             = "instance_terminated"
	MetricReasonCapacityReservationInterrupted = "capacity_reservation_interrupted"
)
