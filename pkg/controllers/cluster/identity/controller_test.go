package identity

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/settings"
)

type fakeDetector struct {
	conflicts []cloudprovider.NameConflict
	listed    int
	err       error
}

func (f *fakeDetector) NameConflicts(context.Context) (cloudprovider.NameCheck, error) {
	if f.err != nil {
		return cloudprovider.NameCheck{}, f.err
	}
	return cloudprovider.NameCheck{Conflicts: f.conflicts, Listed: f.listed}, nil
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestWarnsOncePerOtherCluster: each other cluster gets one Warning event however many checks see it; the gauge
// follows the latest check, back to 0 when the other cluster's resources are gone; a failed check changes nothing.
func TestWarnsOncePerOtherCluster(t *testing.T) {
	det := &fakeDetector{}
	rec := record.NewFakeRecorder(100)
	m := metrics.NewForTest()
	c := NewController(deps.Deps{NameConflicts: det, Recorder: rec, Metrics: m, Settings: &settings.Settings{ClusterName: "prod"}})
	ctx := context.Background()
	other := cloudprovider.NameConflict{ClusterUID: "uid-b", Resources: []string{"i-1", "i-2", "i-3", "lt-1"}}

	steps := []struct {
		name       string
		conflicts  []cloudprovider.NameConflict
		err        error
		wantGauge  float64
		wantEvents []string // substrings, one per event
	}{
		{name: "alone", wantGauge: 0},
		{name: "another cluster appears", conflicts: []cloudprovider.NameConflict{other}, wantGauge: 1,
			wantEvents: []string{`Warning ClusterNameConflict Another cluster (UID uid-b) uses the cluster name "prod" in this cloud account: i-1, i-2, i-3 and 1 more carry the name`}},
		{name: "seen again", conflicts: []cloudprovider.NameConflict{other}, wantGauge: 1},
		{name: "check fails", err: errors.New("throttled"), wantGauge: 1},
		{name: "a third cluster", conflicts: []cloudprovider.NameConflict{other, {ClusterUID: "uid-c", Resources: []string{"lt-9"}}}, wantGauge: 2,
			wantEvents: []string{"(UID uid-c)"}},
		{name: "both gone", wantGauge: 0},
		{name: "first one back", conflicts: []cloudprovider.NameConflict{other}, wantGauge: 1},
	}
	for _, s := range steps {
		det.conflicts, det.err = s.conflicts, s.err
		err := c.Reconcile(ctx)
		if (err != nil) != (s.err != nil) {
			t.Errorf("%s: Reconcile error = %v, want error %v", s.name, err, s.err != nil)
		}
		if got := testutil.ToFloat64(m.ClusterNameConflicts); got != s.wantGauge {
			t.Errorf("%s: dovetail_cluster_name_conflicts = %v, want %v", s.name, got, s.wantGauge)
		}
		events := drain(rec)
		if len(events) != len(s.wantEvents) {
			t.Errorf("%s: events %q, want %d", s.name, events, len(s.wantEvents))
			continue
		}
		for i, want := range s.wantEvents {
			if !strings.Contains(events[i], want) {
				t.Errorf("%s: event %q does not contain %q", s.name, events[i], want)
			}
		}
	}
}

// TestChecksSpacedByWhatTheyRead: the wait after a check grows with the resources it read, one Interval per
// ListedPerInterval, up to MaxInterval; a failed check leaves the wait as it was.
func TestChecksSpacedByWhatTheyRead(t *testing.T) {
	det := &fakeDetector{}
	c := NewController(deps.Deps{NameConflicts: det, Recorder: record.NewFakeRecorder(10), Settings: &settings.Settings{ClusterName: "prod"}})
	ctx := context.Background()
	if got := c.Next(); got != Interval {
		t.Fatalf("before any check: next in %s, want %s", got, Interval)
	}
	for _, s := range []struct {
		listed int
		err    error
		want   time.Duration
	}{
		{listed: 0, want: Interval},
		{listed: 500, want: Interval},
		{listed: 501, want: 2 * Interval},
		{listed: 5000, want: 10 * Interval},
		{listed: 5000, err: errors.New("throttled"), want: 10 * Interval},
		{listed: 20000, want: MaxInterval},
		{listed: 40, want: Interval},
	} {
		det.listed, det.err = s.listed, s.err
		_ = c.Reconcile(ctx)
		if got := c.Next(); got != s.want {
			t.Errorf("after a check of %d resources (error %v): next in %s, want %s", s.listed, s.err, got, s.want)
		}
	}
}
