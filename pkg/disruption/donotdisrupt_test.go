package disruption_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestDoNotDisruptDuration: karpenter.sh/do-not-disrupt: <duration> keeps the node from the pod's start until the
// duration has passed (the snapshot's time, so the clock is injected), then the node is consolidated; a pod not
// started yet is protected; an invalid value protects nothing.
func TestDoNotDisruptDuration(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) // world's Now
	cases := []struct {
		name    string
		value   string
		started *time.Time
		stays   bool
		message string
	}{
		{name: "1m, started 59s ago: stays", value: "1m", started: ptrTime(now.Add(-59 * time.Second)), stays: true,
			message: "karpenter.sh/do-not-disrupt=1m until 2026-11-24T10:00:01Z"},
		{name: "1m, started 60s ago: consolidated", value: "1m", started: ptrTime(now.Add(-time.Minute))},
		{name: "1h30m, started an hour ago: stays", value: "1h30m", started: ptrTime(now.Add(-time.Hour)), stays: true},
		{name: "duration, not started: stays", value: "10m", stays: true, message: "(the pod has not started yet)"},
		{name: "true, started long ago: stays", value: "true", started: ptrTime(now.Add(-240 * time.Hour)), stays: true},
		{name: "invalid value: ignored", value: "forever", started: ptrTime(now)},
		{name: "negative duration: ignored", value: "-5m", started: ptrTime(now)},
		{name: "false: ignored", value: "false", started: ptrTime(now)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("precious", "500m")
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: tc.value}
			if tc.started != nil {
				st := metav1.NewTime(*tc.started)
				p.Status.StartTime = &st
			}
			snap := world(nil, test.Candidate("a", "large", 0.4).Pods(p).Obj())
			r, err := disruption.Decide(context.Background(), snap, disruption.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(r)
			if tc.stays != (got.Command == "") {
				t.Fatalf("decision %+v, want stays=%v", got, tc.stays)
			}
			if tc.stays {
				want := summary{Stays: map[string]disruption.StayReason{"a": disruption.StayDoNotDisrupt}}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("decision (-want +got):\n%s", d)
				}
				if tc.message != "" && !strings.Contains(r.Stays[0].Message, tc.message) {
					t.Errorf("stay message %q lacks %q", r.Stays[0].Message, tc.message)
				}
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
