package interruption

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// UnhealthyThreshold is how long an instance or system status check must have been failing before the instance
// is replaced (Karpenter's threshold; not a setting there either).
const UnhealthyThreshold = 120 * time.Second

// ReasonInstanceUnhealthy is the event reason on a NodeClaim (and its Node) replaced for a failed status check
// or a scheduled event.
const ReasonInstanceUnhealthy = "InstanceUnhealthy"

// InstanceUnhealthyAnnotation is written on a NodeClaim deleted for a failed status check or a scheduled event,
// with the reason, so `dovetailctl explain` can say why the node is going away.
const InstanceUnhealthyAnnotation = "dovetail.sh/instance-unhealthy"

// Disruption reasons of nodeclaims_disrupted_total for each status category, as Karpenter spells them.
var statusDisruptionReasons = map[cloudprovider.StatusCategory]string{
	cloudprovider.StatusCategoryInstance: "instance_status",
	cloudprovider.StatusCategorySystem:   "system_status",
	cloudprovider.StatusCategoryEvent:    "event_status",
}

// StatusDecision says what to do with the NodeClaim of an instance whose status checks fail.
type StatusDecision struct {
	InstanceID string
	// Categories are the categories that call for action, sorted.
	Categories []cloudprovider.StatusCategory
	// Forceful is true when an instance or system check failed: the instance is broken, so the drain does not
	// wait for PodDisruptionBudgets or volume detachment (the NodeClaim's termination deadline is set to now).
	// A scheduled event alone drains normally.
	Forceful bool
	// Since is the earliest time a failing check started (the decision time for events).
	Since time.Time
	// Checks are the checks that call for action.
	Checks []cloudprovider.StatusCheck
}

// DisruptionReason is the reason label of nodeclaims_disrupted_total: instance_status or system_status when a
// check failed, event_status for a scheduled event alone.
func (d StatusDecision) DisruptionReason() string {
	for _, c := range d.Categories {
		if c != cloudprovider.StatusCategoryEvent {
			return statusDisruptionReasons[c]
		}
	}
	return statusDisruptionReasons[d.Categories[0]]
}

// Message is the event message.
func (d StatusDecision) Message() string {
	var parts []string
	for _, c := range d.Checks {
		if c.Category == cloudprovider.StatusCategoryEvent {
			what := "scheduled event " + c.Name
			if !c.NotBefore.IsZero() {
				what += " from " + c.NotBefore.UTC().Format(time.RFC3339)
			}
			parts = append(parts, what)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s check %s failing since %s", c.Category, c.Name, c.ImpairedSince.UTC().Format(time.RFC3339)))
	}
	how := "draining and deleting the NodeClaim"
	if d.Forceful {
		how = "deleting the NodeClaim without waiting for PodDisruptionBudgets"
	}
	return fmt.Sprintf("EC2 reports %s: %s", strings.Join(parts, ", "), how)
}

// DecideStatus returns what to do for an instance: ok false when nothing should happen yet. A failing instance
// or system check calls for action once it has failed for UnhealthyThreshold (a check with no start time counts
// from now); a scheduled event calls for action at once, whatever its start time, since it signals a host that
// should be vacated.
func DecideStatus(s cloudprovider.InstanceStatus, now time.Time) (StatusDecision, bool) {
	d := StatusDecision{InstanceID: s.InstanceID}
	cats := map[cloudprovider.StatusCategory]bool{}
	for _, c := range s.Checks {
		switch c.Category {
		case cloudprovider.StatusCategoryEvent:
			c.ImpairedSince = now
		case cloudprovider.StatusCategoryInstance, cloudprovider.StatusCategorySystem:
			if c.ImpairedSince.IsZero() {
				c.ImpairedSince = now
			}
			if now.Sub(c.ImpairedSince) < UnhealthyThreshold {
				continue
			}
			d.Forceful = true
		default:
			continue
		}
		d.Checks = append(d.Checks, c)
		cats[c.Category] = true
		if d.Since.IsZero() || c.ImpairedSince.Before(d.Since) {
			d.Since = c.ImpairedSince
		}
	}
	if len(d.Checks) == 0 {
		return StatusDecision{}, false
	}
	for c := range cats {
		d.Categories = append(d.Categories, c)
	}
	sort.Slice(d.Categories, func(i, j int) bool { return d.Categories[i] < d.Categories[j] })
	return d, true
}
