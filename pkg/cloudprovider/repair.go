package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// RepairPolicy says which Node condition makes a node unhealthy, and for how long it is tolerated before the node
// is repaired (its NodeClaim force-deleted and replaced) when the NodeRepair feature gate is on.
type RepairPolicy struct {
	// ConditionType is the Node condition to watch, e.g. Ready or a node-monitoring-agent condition.
	ConditionType corev1.NodeConditionType
	// ConditionStatus is the status that marks the node unhealthy.
	ConditionStatus corev1.ConditionStatus
	// TolerationDuration is how long the condition must have held (since its lastTransitionTime) before repair.
	TolerationDuration time.Duration
	// TerminationGracePeriod bounds the drain of a node repaired as a disruption method (Karpenter v1.15): its pods
	// are deleted when it ends, PodDisruptionBudgets or not. The NodeClaim's own terminationGracePeriod applies
	// when shorter, and alone when this is nil. The legacy repair controller deletes every pod at once.
	TerminationGracePeriod *time.Duration
	// Reason, when set, is a regular expression the condition's reason must contain a match of (the AWS provider
	// tells GPU faults apart by the XID code in the reason). Among the policies of one condition type and status,
	// those without a Reason apply only when no policy with one matches.
	Reason string
	// Action is what repair does: RepairReplace (also when empty) or RepairReboot.
	Action RepairAction
}

// RepairAction is what node repair does about a node a policy matches.
type RepairAction string

const (
	// RepairReplace replaces the node (the default: an empty Action means Replace).
	RepairReplace RepairAction = "Replace"
	// RepairReboot reboots the node in place (Karpenter v1.15's AWS gate RebootForRepair), through a cloud provider
	// that implements Rebooter; a reboot that does not bring the node back is followed by a replacement.
	RepairReboot RepairAction = "Reboot"
)

// Reboots says the policy reboots the node rather than replacing it.
func (p RepairPolicy) Reboots() bool { return p.Action == RepairReboot }

// MatchesReason says whether the condition reason is one the policy's Reason pattern accepts: every reason when
// Reason is empty, otherwise those the regular expression finds a match in (unanchored, as Go's MatchString).
// A pattern that does not compile matches nothing; ValidateRepairPolicies reports it.
func (p RepairPolicy) MatchesReason(reason string) bool {
	if p.Reason == "" {
		return true
	}
	re, err := regexp.Compile(p.Reason)
	return err == nil && re.MatchString(reason)
}

// ValidateRepairPolicies checks that every policy's Reason compiles and its Action is known.
func ValidateRepairPolicies(policies []RepairPolicy) error {
	for _, p := range policies {
		if _, err := regexp.Compile(p.Reason); err != nil {
			return fmt.Errorf("repair policy %s=%s: reason pattern %q: %w", p.ConditionType, p.ConditionStatus, p.Reason, err)
		}
		switch p.Action {
		case "", RepairReplace, RepairReboot:
		default:
			return fmt.Errorf("repair policy %s=%s: unknown action %q (want %s or %s)", p.ConditionType, p.ConditionStatus, p.Action, RepairReplace, RepairReboot)
		}
	}
	return nil
}

// Rebooter is implemented by cloud providers that can reboot a NodeClaim's instance in place (the AWS provider,
// with ec2:RebootInstances). Reboot returns a NotFoundError when the instance is gone and a RebootRefusedError
// when the cloud refused the reboot for good (no permission); other errors may be retried.
type Rebooter interface {
	Reboot(ctx context.Context, nodeClaim *karpv1.NodeClaim) error
}

// RebootRefusedError says the cloud refused a reboot in a way retrying cannot change.
type RebootRefusedError struct{ Err error }

func (e *RebootRefusedError) Error() string { return "reboot refused: " + e.Err.Error() }
func (e *RebootRefusedError) Unwrap() error { return e.Err }

// IsRebootRefused reports whether err is (or wraps) a RebootRefusedError.
func IsRebootRefused(err error) bool {
	var e *RebootRefusedError
	return errors.As(err, &e)
}
