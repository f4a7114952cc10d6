package interruption

import (
	"fmt"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// DefaultScheduledLeadTime is how long before a scheduled change's start the drain begins when the NodeClaim has
// no terminationGracePeriod.
const DefaultScheduledLeadTime = 15 * time.Minute

// Action is what to do with the NodeClaim a message concerns.
type Action string

// Actions.
const (
	// ActionDelete deletes the NodeClaim now (drain, then terminate, through the normal deletion path).
	ActionDelete Action = "Delete"
	// ActionDeleteAt deletes the NodeClaim at Decision.At.
	ActionDeleteAt Action = "DeleteAt"
	// ActionEventOnly records an event and leaves the NodeClaim alone.
	ActionEventOnly Action = "EventOnly"
	// ActionIgnore does nothing (a message with no bearing on the NodeClaim).
	ActionIgnore Action = "Ignore"
)

// Event reasons, CamelCase: Karpenter's AWS provider's for the messages it handles too.
const (
	ReasonSpotInterrupted                        = karpv1.EventReasonSpotInterrupted
	ReasonRebalanceRecommended                   = karpv1.EventReasonSpotRebalanceRecommendation
	ReasonInstanceStopping                       = karpv1.EventReasonInstanceStopping
	ReasonInstanceTerminating                    = karpv1.EventReasonInstanceTerminating
	ReasonCapacityReservationInstanceInterrupted = karpv1.EventReasonCapacityReservationInstanceInterrupted
	// ReasonScheduledChange is Dovetail's own: an AWS Health scheduled change and the policy that applied.
	ReasonScheduledChange = "ScheduledChange"
)

// MetricReason is the reason label of karpenter_nodeclaims_disrupted_total for a NodeClaim deleted for the
// message: the kind of message, as Karpenter's AWS provider names it.
func MetricReason(msg Message) string {
	switch msg.Kind {
	case KindSpotInterruption:
		return karpv1.MetricReasonSpotInterrupted
	case KindRebalanceRecommendation:
		return karpv1.MetricReasonRebalanceRecommendation
	case KindScheduledChange:
		return karpv1.MetricReasonScheduledChange
	case KindCapacityReservationInterruption:
		return karpv1.MetricReasonCapacityReservationInterrupted
	case KindStateChange:
		if msg.State == "shutting-down" || msg.State == "terminated" {
			return karpv1.MetricReasonInstanceTerminated
		}
		return karpv1.MetricReasonInstanceStopped
	}
	return "interruption"
}

// EventType is the type of the event for a decision's reason: Normal for a rebalance recommendation (nothing is
// done), Warning otherwise, as Karpenter's AWS provider.
func EventType(reason string) string {
	if reason == ReasonRebalanceRecommended {
		return "Normal"
	}
	return "Warning"
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// At is when to delete, for ActionDeleteAt.
	At time.Time
	// MarkOfferingUnavailable asks to mark the instance's (instance type, zone, spot) offering unavailable.
	MarkOfferingUnavailable bool
	// MarkReservationUnavailable asks to take no more launches into the instance's capacity reservation (EC2 is
	// reclaiming it).
	MarkReservationUnavailable bool
	// Reason is the event reason ("" for ActionIgnore).
	Reason string
	// Message is the event message: what happened and which policy applied.
	Message string
}

// Decide returns what to do with a NodeClaim for msg, given its NodePool's policy, its terminationGracePeriod (nil
// when unset) and the current time.
func Decide(msg Message, p Policy, terminationGracePeriod *time.Duration, now time.Time) Decision {
	switch msg.Kind {
	case KindSpotInterruption:
		if p.Spot == SpotIgnore {
			return Decision{Action: ActionEventOnly, MarkOfferingUnavailable: true, Reason: ReasonSpotInterrupted,
				Message: fmt.Sprintf("Spot interruption warning; %s=%s: not draining, the instance is reclaimed in about two minutes",
					SpotInterruptionAnnotation, SpotIgnore)}
		}
		return Decision{Action: ActionDelete, MarkOfferingUnavailable: true, Reason: ReasonSpotInterrupted,
			Message: fmt.Sprintf("Spot interruption warning; %s=%s: draining and deleting the NodeClaim", SpotInterruptionAnnotation, SpotDrain)}
	case KindRebalanceRecommendation:
		return Decision{Action: ActionEventOnly, Reason: ReasonRebalanceRecommended,
			Message: "EC2 recommends rebalancing: the spot instance is at elevated risk of interruption"}
	case KindStateChange:
		switch msg.State {
		case "stopping", "stopped":
			return Decision{Action: ActionDelete, Reason: ReasonInstanceStopping,
				Message: fmt.Sprintf("Instance state changed to %s: deleting the NodeClaim", msg.State)}
		case "shutting-down", "terminated":
			return Decision{Action: ActionDelete, Reason: ReasonInstanceTerminating,
				Message: fmt.Sprintf("Instance state changed to %s: deleting the NodeClaim", msg.State)}
		}
		return Decision{Action: ActionIgnore}
	case KindCapacityReservationInterruption:
		return Decision{Action: ActionDelete, MarkReservationUnavailable: true, Reason: ReasonCapacityReservationInstanceInterrupted,
			Message: "EC2 is reclaiming the capacity reservation the instance runs in: draining and deleting the NodeClaim"}
	case KindScheduledChange:
		return decideScheduled(msg, p.Scheduled, terminationGracePeriod, now)
	default:
		return Decision{Action: ActionIgnore}
	}
}

func decideScheduled(msg Message, policy ScheduledPolicy, tgp *time.Duration, now time.Time) Decision {
	what := "AWS Health scheduled change"
	if msg.EventTypeCode != "" {
		what += " " + msg.EventTypeCode
	}
	if !msg.StartTime.IsZero() {
		what += " starting " + msg.StartTime.UTC().Format(time.RFC3339)
	}
	switch policy {
	case ScheduledIgnore:
		return Decision{Action: ActionEventOnly, Reason: ReasonScheduledChange,
			Message: fmt.Sprintf("%s; %s=%s: not draining", what, ScheduledChangeAnnotation, ScheduledIgnore)}
	case ScheduledDrain:
		return Decision{Action: ActionDelete, Reason: ReasonScheduledChange,
			Message: fmt.Sprintf("%s; %s=%s: draining and deleting the NodeClaim now", what, ScheduledChangeAnnotation, ScheduledDrain)}
	}
	lead := DefaultScheduledLeadTime
	if tgp != nil {
		lead = *tgp
	}
	if msg.StartTime.IsZero() {
		return Decision{Action: ActionDelete, Reason: ReasonScheduledChange,
			Message: fmt.Sprintf("%s with no start time; %s=%s: draining and deleting the NodeClaim now", what,
				ScheduledChangeAnnotation, ScheduledDrainBeforeStart)}
	}
	at := msg.StartTime.Add(-lead)
	if !at.After(now) {
		return Decision{Action: ActionDelete, Reason: ReasonScheduledChange,
			Message: fmt.Sprintf("%s; %s=%s: the drain (%s before the start) is due, deleting the NodeClaim now", what,
				ScheduledChangeAnnotation, ScheduledDrainBeforeStart, lead)}
	}
	return Decision{Action: ActionDeleteAt, At: at, Reason: ReasonScheduledChange,
		Message: fmt.Sprintf("%s; %s=%s: the NodeClaim will be drained and deleted at %s (%s before the start)", what,
			ScheduledChangeAnnotation, ScheduledDrainBeforeStart, at.UTC().Format(time.RFC3339), lead)}
}
