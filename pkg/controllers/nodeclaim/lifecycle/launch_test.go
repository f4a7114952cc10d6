package lifecycle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// A launch counts as a first one (the cloud provider skips looking for an instance launched before) only for
// a NodeClaim created after this controller started leading, and only until this process tried to launch it.
func TestFirstLaunch(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	claim := func(uid string, created time.Time) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)}}
	}
	cases := []struct {
		name    string
		started bool
		created time.Time
		tried   string // UID of an earlier attempt by this process, if any
		want    bool
	}{
		{name: "not started yet", created: start.Add(time.Hour)},
		{name: "created before the start", started: true, created: start.Add(-time.Hour)},
		{name: "created within the margin after the start", started: true, created: start.Add(firstLaunchMargin)},
		{name: "created after the start", started: true, created: start.Add(firstLaunchMargin + time.Second), want: true},
		{name: "tried before", started: true, created: start.Add(time.Hour), tried: "u1"},
		{name: "a NodeClaim of the same name was tried", started: true, created: start.Add(time.Hour), tried: "u0", want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(deps.Deps{})
			if tc.started {
				c.Started(start)
			}
			if tc.tried != "" {
				c.launches.tried(claim(tc.tried, tc.created))
			}
			if got := c.firstLaunch(claim("u1", tc.created)); got != tc.want {
				t.Errorf("firstLaunch = %v, want %v", got, tc.want)
			}
		})
	}
	// Once the NodeClaim is launched or gone, its attempt is forgotten with it; dropping only the kept result
	// (the cache never showed the recorded launch) keeps it.
	c := NewController(deps.Deps{})
	c.Started(start)
	nc := claim("u1", start.Add(time.Hour))
	c.launches.tried(nc)
	c.launches.dropResult(nc.Name)
	if c.firstLaunch(nc) {
		t.Error("a NodeClaim whose launch result was dropped counts as a first launch")
	}
	c.launches.forget(nc.Name)
	if !c.firstLaunch(nc) {
		t.Error("a forgotten NodeClaim does not count as a first launch")
	}
}

// A recorded launch or registration is awaited from a cache behind its write, and no longer once the cache is
// past it without showing it (someone rewrote the status); where the versions cannot be compared, for maxCacheLag.
func TestWriteAhead(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cached := func(rv string) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
	}
	cases := []struct {
		name    string
		written string
		cached  string
		after   time.Duration
		want    bool
	}{
		{name: "cache behind", written: "1200", cached: "999", after: time.Second, want: true},
		{name: "cache behind for minutes", written: "1200", cached: "1199", after: 5 * time.Minute, want: true},
		{name: "cache behind past maxCacheLag", written: "1200", cached: "1199", after: maxCacheLag},
		{name: "cache at the write", written: "1200", cached: "1200", after: time.Second},
		{name: "cache past the write", written: "1200", cached: "1300", after: time.Second},
		{name: "versions not comparable", written: "x1", cached: "x2", after: time.Second, want: true},
		{name: "versions not comparable past maxCacheLag", written: "x1", cached: "x2", after: maxCacheLag},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := writeMark{at: at, resourceVersion: tc.written}
			if got := w.ahead(cached(tc.cached), at.Add(tc.after)); got != tc.want {
				t.Errorf("ahead = %v, want %v", got, tc.want)
			}
		})
	}
}
