// Package reboot decides the next step of a node reboot that node repair asked for (Karpenter v1.15's reboot
// repair, the AWS gate RebootForRepair): drain the node within the reboot's grace period, issue the reboot, watch
// the node come back with a new boot ID, and end in success, or in failure (the node is then replaced) when the
// reboot cannot be issued or the node does not return within the observation window. It is a pure function of the
// NodeClaim's and Node's state and a time.
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
	// MinDrainTime is the shortest drain before a reboot that drains at all: pods bound to the node just before
	// it was fenced are evicted too.
	MinDrainTime = 5 * time.Second
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
	// Drain: fence the node (the rebooting taint), evict the pods a drain evicts (PodDisruptionBudgets apply; pods
	// with karpenter.sh/do-not-disrupt are waited for, not evicted), and look again after Step.Requeue.
	Drain Action = "Drain"
	// Issue: fence the node (the rebooting taint), record its boot ID, call the cloud, then move to Issued. Pods
	// still on the node (the drain's grace period ended) ride the reboot.
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
	// PreBootID is the karpenter.sh/reboot-pre-boot-id annotation; HasPreBootID says it is set (the drain is over
	// and the call may have been made).
	PreBootID    string
	HasPreBootID bool
	// IssuingSince is when the first call was tried, after the drain (zero: now). The calls may fail for
	// IssuanceTimeout from then on.
	IssuingSince time.Time
	// PodsLeft counts the pods the drain still waits for on the Node (those a drain evicts: not DaemonSet, static,
	// terminal, stuck terminating or tolerating karpenter.sh/disrupted).
	PodsLeft int
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
		if in.HasPreBootID {
			return issuing(in)
		}
		if !in.NodeFound {
			// Without its Node the drain cannot run: the reboot is bounded from the request.
			deadline := in.RequestedAt.Add(IssuanceTimeout)
			if in.Now.After(deadline) {
				return Step{Action: Fail, Result: ProviderError, Message: fmt.Sprintf("the reboot was not issued within %s", IssuanceTimeout)}
			}
			return Step{Action: Wait, Requeue: min(PollInterval, deadline.Sub(in.Now)+time.Second)}
		}
		return drain(in)
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

// drain decides the drain before the reboot call. A grace period of zero skips it (every pod rides the reboot).
// Otherwise the drain lasts at least MinDrainTime from the request, and ends when no pod is left or, with a grace
// period, when it has run out (counted from the request, at least MinDrainTime): the pods still there ride the
// reboot; none is deleted. Without a grace period it waits for the last pod.
func drain(in Input) Step {
	var deadline *time.Time
	if in.HasGracePeriod {
		grace, _ := ParseGracePeriod(in.GracePeriod)
		if grace == 0 {
			return Step{Action: Issue}
		}
		d := in.RequestedAt.Add(max(grace, MinDrainTime))
		deadline = &d
	}
	if in.PodsLeft > 0 {
		switch {
		case deadline == nil:
			return Step{Action: Drain, Requeue: PollInterval}
		case in.Now.Before(*deadline):
			return Step{Action: Drain, Requeue: min(PollInterval, deadline.Sub(in.Now))}
		}
		return Step{Action: Issue, Message: fmt.Sprintf("the drain's grace period %s ended with %d pod(s) left on the node: they ride the reboot",
			in.GracePeriod, in.PodsLeft)}
	}
	if floor := in.RequestedAt.Add(MinDrainTime); in.Now.Before(floor) {
		return Step{Action: Drain, Requeue: floor.Sub(in.Now)}
	}
	return Step{Action: Issue}
}

// issuing decides once the drain is over and the boot ID recorded: the call may have gone through (a new boot ID),
// or is made again until IssuanceTimeout after the first try.
func issuing(in Input) Step {
	if in.NodeFound && in.BootID != in.PreBootID {
		return Step{Action: MarkIssued, BootChanged: true}
	}
	start := in.IssuingSince
	if start.IsZero() {
		start = in.Now
	}
	deadline := start.Add(IssuanceTimeout)
	if in.Now.After(deadline) {
		return Step{Action: Fail, Result: ProviderError, Message: fmt.Sprintf("the reboot was not issued within %s", IssuanceTimeout)}
	}
	if !in.NodeFound {
		return Step{Action: Wait, Requeue: min(PollInterval, deadline.Sub(in.Now)+time.Second)}
	}
	return Step{Action: Issue}
}
