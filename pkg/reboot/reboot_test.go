package reboot

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	requested := func(now time.Duration) Input {
		return Input{Now: t0.Add(now), Phase: Requested, RequestedAt: t0, NodeFound: true, BootID: "b0", Ready: false}
	}
	issued := func(now time.Duration) Input {
		return Input{Now: t0.Add(now), Phase: Issued, RequestedAt: t0, IssuedAt: t0.Add(time.Minute), PreBootID: "b0",
			HasPreBootID: true, NodeFound: true, BootID: "b0"}
	}
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	for _, tc := range []struct {
		name string
		in   Input
		want Step
	}{
		{"requested, no pod to drain: issue once the minimum drain is over", requested(MinDrainTime), Step{Action: Issue}},
		{"requested, no pod to drain, within the minimum drain: drain again then", requested(2 * time.Second),
			Step{Action: Drain, Requeue: 3 * time.Second}},
		{"requested, pods left, no grace period: drain (no issuance timeout while draining)", with(requested(time.Hour), func(in *Input) { in.PodsLeft = 2 }),
			Step{Action: Drain, Requeue: PollInterval}},
		{"requested, pods left within the grace period: drain", with(requested(30*time.Second), func(in *Input) {
			in.PodsLeft, in.GracePeriod, in.HasGracePeriod = 1, "1m0s", true
		}), Step{Action: Drain, Requeue: PollInterval}},
		{"requested, pods left, grace period ends in 10s: drain, look again then", with(requested(50*time.Second), func(in *Input) {
			in.PodsLeft, in.GracePeriod, in.HasGracePeriod = 1, "1m0s", true
		}), Step{Action: Drain, Requeue: 10 * time.Second}},
		{"requested, pods left past the grace period: they ride the reboot", with(requested(time.Minute+time.Second), func(in *Input) {
			in.PodsLeft, in.GracePeriod, in.HasGracePeriod = 1, "1m0s", true
		}), Step{Action: Issue, Message: "the drain's grace period 1m0s ended with 1 pod(s) left on the node: they ride the reboot"}},
		{"requested, a grace period shorter than the minimum drain: drain for the minimum", with(requested(3*time.Second), func(in *Input) {
			in.PodsLeft, in.GracePeriod, in.HasGracePeriod = 1, "1s", true
		}), Step{Action: Drain, Requeue: 2 * time.Second}},
		{"requested, zero grace period: no drain, the pods ride the reboot", with(requested(0), func(in *Input) {
			in.PodsLeft, in.GracePeriod, in.HasGracePeriod = 3, "0s", true
		}), Step{Action: Issue}},
		{"requested, node gone: wait", with(requested(time.Minute), func(in *Input) { in.NodeFound = false }),
			Step{Action: Wait, Requeue: PollInterval}},
		{"requested, node gone past the issuance timeout: fail", with(requested(IssuanceTimeout+time.Second), func(in *Input) { in.NodeFound = false }),
			Step{Action: Fail, Result: ProviderError, Message: "the reboot was not issued within 5m0s"}},
		{"requested, call already made (boot ID changed): no second call", with(requested(time.Minute), func(in *Input) {
			in.PreBootID, in.HasPreBootID, in.BootID = "b0", true, "b1"
		}), Step{Action: MarkIssued, BootChanged: true}},
		{"requested, boot ID recorded, same boot: call (again)", with(requested(time.Minute), func(in *Input) {
			in.PreBootID, in.HasPreBootID = "b0", true
		}), Step{Action: Issue}},
		{"calls failing until the issuance timeout: still issue", with(requested(time.Hour+IssuanceTimeout), func(in *Input) {
			in.PreBootID, in.HasPreBootID, in.IssuingSince = "b0", true, t0.Add(time.Hour)
		}), Step{Action: Issue}},
		{"calls failing past the issuance timeout (counted from the first call, after the drain): fail", with(requested(time.Hour+IssuanceTimeout+time.Second), func(in *Input) {
			in.PreBootID, in.HasPreBootID, in.IssuingSince = "b0", true, t0.Add(time.Hour)
		}), Step{Action: Fail, Result: ProviderError, Message: "the reboot was not issued within 5m0s"}},
		{"malformed grace period: invalid request", with(requested(0), func(in *Input) { in.GracePeriod, in.HasGracePeriod = "soon", true }),
			Step{Action: Fail, Result: InvalidRequest, Message: `invalid reboot request: reboot termination grace period "soon": time: invalid duration "soon"`}},
		{"negative grace period: invalid request", with(requested(0), func(in *Input) { in.GracePeriod, in.HasGracePeriod = "-1s", true }),
			Step{Action: Fail, Result: InvalidRequest, Message: `invalid reboot request: reboot termination grace period "-1s" is negative`}},
		{"zero grace period is valid", with(requested(0), func(in *Input) { in.GracePeriod, in.HasGracePeriod = "0s", true }),
			Step{Action: Issue}},
		{"issued, same boot: wait", issued(2 * time.Minute), Step{Action: Wait, Requeue: PollInterval}},
		{"issued, new boot, not Ready: wait, fence off", with(issued(2*time.Minute), func(in *Input) { in.BootID = "b1" }),
			Step{Action: Wait, BootChanged: true, Requeue: PollInterval}},
		{"issued, new boot, Ready: succeed", with(issued(2*time.Minute), func(in *Input) { in.BootID, in.Ready = "b1", true }),
			Step{Action: Succeed, Result: Succeeded, BootChanged: true, Message: "the node rebooted and is Ready again"}},
		{"issued, same boot but Ready (the reboot has not happened yet): wait", with(issued(2*time.Minute), func(in *Input) { in.Ready = true }),
			Step{Action: Wait, Requeue: PollInterval}},
		{"issued, window ends in 5s: requeue then", issued(ObservationWindow + time.Minute - 5*time.Second),
			Step{Action: Wait, Requeue: 6 * time.Second}},
		{"issued past the window (counted from the call): fail", issued(time.Minute + ObservationWindow + time.Second),
			Step{Action: Fail, Result: RecoveryTimeout, Message: "the node did not come back within the 20m0s observation window"}},
		{"issued, window counted from the request without a call time", with(issued(ObservationWindow+time.Second), func(in *Input) { in.IssuedAt = time.Time{} }),
			Step{Action: Fail, Result: RecoveryTimeout, Message: "the node did not come back within the 20m0s observation window"}},
		{"a shorter window", with(issued(time.Minute+2*time.Minute+time.Second), func(in *Input) { in.Window = 2 * time.Minute }),
			Step{Action: Fail, Result: RecoveryTimeout, Message: "the node did not come back within the 2m0s observation window"}},
		{"issued, node gone: wait", with(issued(2*time.Minute), func(in *Input) { in.NodeFound = false }),
			Step{Action: Wait, Requeue: PollInterval}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Decide(tc.in)); d != "" {
				t.Errorf("Decide (-want +got):\n%s", d)
			}
		})
	}
}
