package interruption

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyFromAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        Policy
		invalid     []string
	}{
		{name: "none", want: DefaultPolicy()},
		{name: "both set", annotations: map[string]string{SpotInterruptionAnnotation: "Ignore", ScheduledChangeAnnotation: "Drain"},
			want: Policy{Spot: SpotIgnore, Scheduled: ScheduledDrain}},
		{name: "scheduled ignore", annotations: map[string]string{ScheduledChangeAnnotation: "Ignore"},
			want: Policy{Spot: SpotDrain, Scheduled: ScheduledIgnore}},
		{name: "invalid values fall back", annotations: map[string]string{SpotInterruptionAnnotation: "drain", ScheduledChangeAnnotation: "Later"},
			want: DefaultPolicy(), invalid: []string{SpotInterruptionAnnotation, ScheduledChangeAnnotation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, invalid := PolicyFromAnnotations(tt.annotations)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			var keys []string
			for _, i := range invalid {
				keys = append(keys, i.Key)
			}
			if diff := cmp.Diff(tt.invalid, keys); diff != "" {
				t.Errorf("invalid keys (-want +got):\n%s", diff)
			}
		})
	}
	_, invalid := PolicyFromAnnotations(map[string]string{SpotInterruptionAnnotation: "x"})
	if want := `annotation dovetail.sh/spot-interruption has invalid value "x"; allowed values are Drain, Ignore; using the default Drain`; invalid[0].Message() != want {
		t.Errorf("message = %q, want %q", invalid[0].Message(), want)
	}
}

func TestDecideReasons(t *testing.T) {
	def := DefaultPolicy()
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		msg       Message
		reason    string
		eventType string
	}{
		{Message{Kind: KindSpotInterruption}, "SpotInterrupted", "Warning"},
		{Message{Kind: KindRebalanceRecommendation}, "SpotRebalanceRecommendation", "Normal"},
		{Message{Kind: KindStateChange, State: "stopping"}, "InstanceStopping", "Warning"},
		{Message{Kind: KindStateChange, State: "stopped"}, "InstanceStopping", "Warning"},
		{Message{Kind: KindStateChange, State: "shutting-down"}, "InstanceTerminating", "Warning"},
		{Message{Kind: KindStateChange, State: "terminated"}, "InstanceTerminating", "Warning"},
		{Message{Kind: KindCapacityReservationInterruption}, "CapacityReservationInstanceInterrupted", "Warning"},
	}
	for _, tt := range tests {
		d := Decide(tt.msg, def, nil, now)
		if d.Reason != tt.reason || EventType(d.Reason) != tt.eventType {
			t.Errorf("Decide(%s %s): %s %s, want %s %s", tt.msg.Kind, tt.msg.State, EventType(d.Reason), d.Reason, tt.eventType, tt.reason)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	hour := time.Hour
	fiveMin := 5 * time.Minute
	def := DefaultPolicy()
	beforeStart := Policy{Spot: SpotDrain, Scheduled: ScheduledDrainBeforeStart}
	tests := []struct {
		name   string
		msg    Message
		policy Policy
		tgp    *time.Duration
		want   Action
		at     time.Time
		mark   bool
	}{
		{name: "spot default drains", msg: Message{Kind: KindSpotInterruption}, policy: def, want: ActionDelete, mark: true},
		{name: "spot ignore is an event, offering still marked", msg: Message{Kind: KindSpotInterruption},
			policy: Policy{Spot: SpotIgnore, Scheduled: DefaultScheduledPolicy}, want: ActionEventOnly, mark: true},
		{name: "rebalance is an event", msg: Message{Kind: KindRebalanceRecommendation}, policy: def, want: ActionEventOnly},
		{name: "stopping deletes", msg: Message{Kind: KindStateChange, State: "stopping"}, policy: def, want: ActionDelete},
		{name: "stopped deletes", msg: Message{Kind: KindStateChange, State: "stopped"}, policy: def, want: ActionDelete},
		{name: "shutting-down deletes", msg: Message{Kind: KindStateChange, State: "shutting-down"}, policy: def, want: ActionDelete},
		{name: "terminated deletes", msg: Message{Kind: KindStateChange, State: "terminated"}, policy: def, want: ActionDelete},
		{name: "capacity reservation interruption deletes", msg: Message{Kind: KindCapacityReservationInterruption}, policy: def, want: ActionDelete},
		{name: "running is ignored", msg: Message{Kind: KindStateChange, State: "running"}, policy: def, want: ActionIgnore},
		{name: "unknown is ignored", msg: Message{Kind: KindUnknown}, policy: def, want: ActionIgnore},
		{name: "scheduled default: now, as Karpenter", msg: Message{Kind: KindScheduledChange, StartTime: now.Add(hour)}, policy: def,
			want: ActionDelete},
		{name: "scheduled DrainBeforeStart, no TGP: 15 minutes before start",
			msg: Message{Kind: KindScheduledChange, StartTime: now.Add(hour)}, policy: beforeStart, want: ActionDeleteAt, at: now.Add(45 * time.Minute)},
		{name: "scheduled DrainBeforeStart, TGP 5m", msg: Message{Kind: KindScheduledChange, StartTime: now.Add(hour)}, policy: beforeStart, tgp: &fiveMin,
			want: ActionDeleteAt, at: now.Add(55 * time.Minute)},
		{name: "scheduled DrainBeforeStart, lead already past: now", msg: Message{Kind: KindScheduledChange, StartTime: now.Add(10 * time.Minute)},
			policy: beforeStart, want: ActionDelete},
		{name: "scheduled DrainBeforeStart, due exactly now", msg: Message{Kind: KindScheduledChange, StartTime: now.Add(hour)}, policy: beforeStart, tgp: &hour,
			want: ActionDelete},
		{name: "scheduled DrainBeforeStart, no start time: now", msg: Message{Kind: KindScheduledChange}, policy: beforeStart, want: ActionDelete},
		{name: "scheduled drain: now", msg: Message{Kind: KindScheduledChange, StartTime: now.Add(hour)},
			policy: Policy{Spot: SpotDrain, Scheduled: ScheduledDrain}, want: ActionDelete},
		{name: "scheduled ignore: event", msg: Message{Kind: KindScheduledChange, StartTime: now.Add(hour)},
			policy: Policy{Spot: SpotDrain, Scheduled: ScheduledIgnore}, want: ActionEventOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.msg, tt.policy, tt.tgp, now)
			type summary struct {
				Action Action
				At     time.Time
				Mark   bool
				Reason bool
			}
			want := summary{Action: tt.want, At: tt.at, Mark: tt.mark, Reason: tt.want != ActionIgnore}
			if diff := cmp.Diff(want, summary{got.Action, got.At, got.MarkOfferingUnavailable, got.Reason != ""}); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if got.Action != ActionIgnore && got.Message == "" {
				t.Errorf("Decide gave no event message")
			}
		})
	}
}

// TestMessageMetricLabel: the message_type of each kind is Karpenter's name for it; a state change is named by the
// state it reports.
func TestMessageMetricLabel(t *testing.T) {
	for _, tt := range []struct {
		msg  Message
		want string
	}{
		{Message{Kind: KindSpotInterruption}, "spot_interrupted"},
		{Message{Kind: KindRebalanceRecommendation}, "rebalance_recommendation"},
		{Message{Kind: KindScheduledChange}, "scheduled_change"},
		{Message{Kind: KindCapacityReservationInterruption}, "capacity_reservation_interrupted"},
		{Message{Kind: KindStateChange, State: "stopping"}, "instance_stopped"},
		{Message{Kind: KindStateChange, State: "stopped"}, "instance_stopped"},
		{Message{Kind: KindStateChange, State: "shutting-down"}, "instance_terminated"},
		{Message{Kind: KindStateChange, State: "terminated"}, "instance_terminated"},
		{Message{Kind: KindUnknown}, "no_op"},
	} {
		if got := tt.msg.MetricLabel(); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.msg.Kind, tt.msg.State, got, tt.want)
		}
	}
}

// TestDecideMarksOnlyAnInterruptedReservation: only a capacity reservation interruption warning asks to take no
// more launches into the instance's reservation.
func TestDecideMarksOnlyAnInterruptedReservation(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, msg := range []Message{
		{Kind: KindCapacityReservationInterruption}, {Kind: KindSpotInterruption}, {Kind: KindRebalanceRecommendation},
		{Kind: KindStateChange, State: "stopping"}, {Kind: KindScheduledChange, StartTime: now.Add(time.Hour)},
	} {
		got := Decide(msg, DefaultPolicy(), nil, now).MarkReservationUnavailable
		if want := msg.Kind == KindCapacityReservationInterruption; got != want {
			t.Errorf("%s: MarkReservationUnavailable = %t, want %t", msg.Kind, got, want)
		}
	}
}
