package termination_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/termination"
)

func TestDeadline(t *testing.T) {
	if got := termination.Deadline(t0, nil); got != nil {
		t.Errorf("Deadline without a grace period = %v, want nil", got)
	}
	tgp := 2 * time.Hour
	if diff := cmp.Diff(at(2*time.Hour), termination.Deadline(t0, &tgp)); diff != "" {
		t.Errorf("Deadline (-want +got):\n%s", diff)
	}
}

func TestDeadlineRoundTrip(t *testing.T) {
	s := termination.FormatDeadline(t0.Add(90 * time.Second))
	if s != "2026-11-23T09:01:30Z" {
		t.Errorf("FormatDeadline = %q", s)
	}
	got, err := termination.ParseDeadline(s)
	if err != nil {
		t.Fatalf("ParseDeadline: %v", err)
	}
	if !got.Equal(t0.Add(90 * time.Second)) {
		t.Errorf("ParseDeadline = %v", got)
	}
	if _, err := termination.ParseDeadline("tomorrow"); err == nil {
		t.Errorf("ParseDeadline(tomorrow) succeeded, want an error")
	}
}

func TestForcedGracePeriodSeconds(t *testing.T) {
	cases := []struct {
		name     string
		left     time.Duration
		podGrace time.Duration
		want     int64
	}{
		{"plenty of time: the pod's own grace", time.Hour, 30 * time.Second, 30},
		{"less time than grace: the time left", 12 * time.Second, 30 * time.Second, 12},
		{"fractions round down so the pod is gone by the deadline", 12*time.Second + 900*time.Millisecond, 30 * time.Second, 12},
		{"at the deadline: at once", 0, 30 * time.Second, 0},
		{"past the deadline: at once", -time.Minute, 30 * time.Second, 0},
		{"zero-grace pod", time.Minute, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := termination.ForcedGracePeriodSeconds(t0.Add(tc.left), t0, tc.podGrace); got != tc.want {
				t.Errorf("ForcedGracePeriodSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	cases := []struct {
		name     string
		deadline *time.Time
		want     bool
	}{
		{"no deadline never expires", nil, false},
		{"future", at(time.Second), false},
		{"now", at(0), true},
		{"past", at(-time.Second), true},
	}
	for _, tc := range cases {
		if got := termination.Expired(tc.deadline, t0); got != tc.want {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEvictionBackoff(t *testing.T) {
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for failures, w := range want {
		if got := termination.EvictionBackoff(failures); got != w {
			t.Errorf("EvictionBackoff(%d) = %v, want %v", failures, got, w)
		}
	}
}
