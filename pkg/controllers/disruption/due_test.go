package disruption

import (
	"testing"
	"time"
)

// TestDecisionDue: with commands in flight, a decision follows a change of the commands in progress, or
// PollPeriod, but not within as long as the last decision took (at most PollPeriod) after it ended.
func TestDecisionDue(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	cases := []struct {
		name            string
		decided, ended  time.Time
		took            time.Duration
		now             time.Time
		before, current string
		decidedWith     string
		want            bool
	}{
		{name: "nothing in flight", now: t0, want: true},
		{name: "nothing changed since a recent decision", decided: t0, ended: t0, now: t0.Add(2 * time.Second),
			before: "c1", current: "c1", decidedWith: "c1", want: false},
		{name: "nothing changed, PollPeriod passed", decided: t0, ended: t0, now: t0.Add(PollPeriod),
			before: "c1", current: "c1", decidedWith: "c1", want: true},
		{name: "a deletion ended, the last decision was fast", decided: t0, ended: t0.Add(time.Second), took: time.Second,
			now: t0.Add(3 * time.Second), before: "c1,-n1", current: "c1", decidedWith: "c1,-n1", want: true},
		{name: "a deletion ended, within a slow decision's time after it", decided: t0, ended: t0.Add(25 * time.Second), took: 25 * time.Second,
			now: t0.Add(29 * time.Second), before: "c1,-n1", current: "c1", decidedWith: "c1,-n1", want: false},
		{name: "a deletion ended, PollPeriod after a slow decision", decided: t0, ended: t0.Add(25 * time.Second), took: 25 * time.Second,
			now: t0.Add(25*time.Second + PollPeriod), before: "c1,-n1", current: "c1", decidedWith: "c1,-n1", want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{decided: tc.decided, decidedWith: tc.decidedWith, decideEnded: tc.ended, decideTook: tc.took}
			if got := c.decisionDue(tc.now, tc.now, tc.before, tc.current); got != tc.want {
				t.Errorf("decisionDue = %v, want %v", got, tc.want)
			}
		})
	}
}
