// Package reboot decides the next step of a node reboot that node repair asked for (Karpenter v1.15's reboot
// repair, the AWS gate RebootForRepair): issue the reboot, watch the node come back with a new boot ID, and end
// in success, or in failure (the node is then replaced) when the reboot cannot be issued or the node does not
// return within the observation window. It is a pure function of the NodeClaim's and Node's state and a time.
package reboot

import (
	"fmt"
	"time"
)

// Karpenter v1.15's figures.
const (
	// ObservationWindow is how long after the reboot call the node has to come back (a new boot ID, Ready).
	ObservationWindow = 20 * time.Minute
	// IssuanceTimeout is how long after the request the reboot call may keep failing before the reboot fails.
	IssuanceTimeout = 5 * time.Minute
	// PollInterval is how often a reboot in progress is looked at again.
	PollInterval = 15 * time.Second
)

// Result is how a reboot ended, the result label of the reboot metrics.
type Result string

const (
	Succeeded       Result = "succeeded"
	ProviderError   Result = "provider_error"
	RecoveryTimeout Result = "recovery_timeout"
	InvalidRequest  Result = "invalid_request"
)

// Phase is the reason of the NodeClaim's Rebooting condition while it is true.
type Phase string

const (
	Requested Phase = "RebootRequested"
	Issued    Phase = "RebootIssued"
)

// Action is what the controller does next.
type Action string

const (
	// Wait: look again after Step.Requeue.
	Wait Action = "Wait"
	// Issue: fence the node (the rebooting taint), record its boot ID, call the cloud, then move to Issued.
	Issue Action = "Issue"
	// MarkIssued: the boot ID already changed (the call went through before a restart): move to Issued without
	// calling again.
	MarkIssued Action = "MarkIssued"
	// Succeed: the node is back; end the reboot (Rebooting=False, RebootSucceeded).
	Succeed Action = "Succeed"
	// Fail: end the reboot (Rebooting=False, RebootFailed); unless Result is InvalidRequest, replace the node.
	Fail Action = "Fail"
)

// Input is what the decision looks at.
type Input struct {
	Now   time.Time
	Phase Phase
	// RequestedAt is when repair asked for the reboot (the Rebooting condition's transition to true); IssuedAt when
	// the reboot call succeeded (zero before).
	RequestedAt, IssuedAt time.Time
	// PreBootID is the karpenter.sh/reboot-pre-boot-id annotation; HasPreBootID says it is set (the call may have
	// been made).
	PreBootID    string
	HasPreBootID bool
	// GracePeriod is the karpenter.sh/reboot-termination-grace-period annotation, when HasGracePeriod.
	GracePeriod    string
	HasGracePeriod bool
	// Window is the observation window (ObservationWindow when zero).
	Window time.Duration
	// NodeFound says the NodeClaim's Node exists; BootID and Ready are its status.
	NodeFound bool
	BootID    string
	Ready     bool
}

// Step is the decision.
type Step struct {
	Action  Action
	Result  Result
	Message string
	// BootChanged says the node has booted again (its boot ID differs from PreBootID): the rebooting taint goes.
	BootChanged bool
	// Requeue is when to look again (Wait).
	Requeue time.Duration
}

// ParseGracePeriod reads the karpenter.sh/reboot-termination-grace-period annotation: a non-negative Go duration.
func ParseGracePeriod(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("reboot termination grace period %q: %w", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("reboot termination grace period %q is negative", s)
	}
	return d, nil
}

// Decide returns the next step of the reboot.
func Decide(in Input) Step {
	if in.HasGracePeriod {
		if _, err := ParseGracePeriod(in.GracePeriod); err != nil {
			return Step{Action: Fail, Result: InvalidRequest, Message: "invalid reboot request: " + err.Error()}
		}
	}
	switch in.Phase {
	case Requested:
		deadline := in.RequestedAt.Add(IssuanceTimeout)
		if in.Now.After(deadline) {
			return Step{Action: Fail, Result: ProviderError, Message: fmt.Sprintf("the reboot was not issued within %s", IssuanceTimeout)}
		}
		if !in.NodeFound {
			return Step{Action: Wait, Requeue: min(PollInterval, deadline.Sub(in.Now)+time.Second)}
		}
		if in.HasPreBootID && in.BootID != in.PreBootID {
			return Step{Action: MarkIssued, BootChanged: true}
		}
		return Step{Action: Issue}
	case Issued:
		start := in.IssuedAt
		if start.IsZero() {
			start = in.RequestedAt
		}
		window := in.Window
		if window <= 0 {
			window = ObservationWindow
		}
		deadline := start.Add(window)
		if in.Now.After(deadline) {
			return Step{Action: Fail, Result: RecoveryTimeout, Message: fmt.Sprintf("the node did not come back within the %s observation window", window)}
		}
		changed := in.NodeFound && in.BootID != in.PreBootID
		if changed && in.Ready {
			return Step{Action: Succeed, Result: Succeeded, BootChanged: true, Message: "the node rebooted and is Ready again"}
		}
		return Step{Action: Wait, BootChanged: changed, Requeue: min(PollInterval, deadline.Sub(in.Now)+time.Second)}
	default:
		return Step{Action: Wait, Requeue: PollInterval}
	}
}
