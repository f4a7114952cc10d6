package interruption

import (
	"fmt"
	"strings"
)

// NodePool annotations that choose how interruption messages are handled. Karpenter ignores unknown annotations,
// so NodePools carrying them stay valid Karpenter manifests.
const (
	SpotInterruptionAnnotation = "dovetail.sh/spot-interruption"
	ScheduledChangeAnnotation  = "dovetail.sh/scheduled-change"
	// DeleteAtAnnotation on a NodeClaim holds the RFC 3339 time at which the interruption controller deletes it
	// (a scheduled change drained before its start); it survives controller restarts.
	DeleteAtAnnotation = "dovetail.sh/interruption-delete-at"
)

// SpotPolicy is the value of dovetail.sh/spot-interruption.
type SpotPolicy string

// Spot interruption policies.
const (
	// SpotDrain deletes the NodeClaim at once, so its pods are evicted within the two-minute warning.
	SpotDrain SpotPolicy = "Drain"
	// SpotIgnore only records an event; the instance still goes away and the NodeClaim is cleaned up when it does.
	SpotIgnore SpotPolicy = "Ignore"
)

// ScheduledPolicy is the value of dovetail.sh/scheduled-change.
type ScheduledPolicy string

// Scheduled change (AWS Health) policies.
const (
	// ScheduledDrain deletes the NodeClaim at once, as Karpenter does (the default).
	ScheduledDrain ScheduledPolicy = "Drain"
	// ScheduledDrainBeforeStart deletes the NodeClaim at the change's start minus its terminationGracePeriod
	// (DefaultScheduledLeadTime when it has none), or at once when that time has passed: a NodePool's opt-in.
	ScheduledDrainBeforeStart ScheduledPolicy = "DrainBeforeStart"
	// ScheduledIgnore only records an event.
	ScheduledIgnore ScheduledPolicy = "Ignore"
)

// Defaults.
const (
	DefaultSpotPolicy      = SpotDrain
	DefaultScheduledPolicy = ScheduledDrain
)

// Policy is a NodePool's interruption policy.
type Policy struct {
	Spot      SpotPolicy
	Scheduled ScheduledPolicy
}

// DefaultPolicy is the policy of a NodePool without annotations.
func DefaultPolicy() Policy {
	return Policy{Spot: DefaultSpotPolicy, Scheduled: DefaultScheduledPolicy}
}

// InvalidAnnotation names an annotation whose value is not allowed; the default was used instead.
type InvalidAnnotation struct {
	Key     string
	Value   string
	Allowed []string
	Default string
}

// Message is the text of the Warning event about the annotation.
func (i InvalidAnnotation) Message() string {
	return fmt.Sprintf("annotation %s has invalid value %q; allowed values are %s; using the default %s",
		i.Key, i.Value, strings.Join(i.Allowed, ", "), i.Default)
}

// PolicyFromAnnotations reads a NodePool's policy from its annotations. Invalid values fall back to the default
// and are returned so the caller can warn about them.
func PolicyFromAnnotations(annotations map[string]string) (Policy, []InvalidAnnotation) {
	p := DefaultPolicy()
	var invalid []InvalidAnnotation
	if v, ok := annotations[SpotInterruptionAnnotation]; ok {
		switch SpotPolicy(v) {
		case SpotDrain, SpotIgnore:
			p.Spot = SpotPolicy(v)
		default:
			invalid = append(invalid, InvalidAnnotation{Key: SpotInterruptionAnnotation, Value: v,
				Allowed: []string{string(SpotDrain), string(SpotIgnore)}, Default: string(DefaultSpotPolicy)})
		}
	}
	if v, ok := annotations[ScheduledChangeAnnotation]; ok {
		switch ScheduledPolicy(v) {
		case ScheduledDrain, ScheduledDrainBeforeStart, ScheduledIgnore:
			p.Scheduled = ScheduledPolicy(v)
		default:
			invalid = append(invalid, InvalidAnnotation{Key: ScheduledChangeAnnotation, Value: v,
				Allowed: []string{string(ScheduledDrain), string(ScheduledDrainBeforeStart), string(ScheduledIgnore)},
				Default: string(DefaultScheduledPolicy)})
		}
	}
	return p, invalid
}
