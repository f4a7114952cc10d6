package disruption

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestConsolidationAt(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	now := clk.Now()
	initAt := now.Add(-time.Hour)
	tests := []struct {
		name string
		nc   *karpv1.NodeClaim
		np   *karpv1.NodePool
		want consolidation
	}{
		{
			name: "not initialized",
			nc:   test.NodeClaim("a", "default").Launched(initAt).Obj(),
			np:   test.NodePool("default").ConsolidateAfter("5m").Obj(),
		},
		{
			name: "initialization counts when no pod event happened",
			nc:   test.NodeClaim("a", "default").Initialized(initAt).Obj(),
			np:   test.NodePool("default").ConsolidateAfter("5m").Obj(),
			want: consolidation{Enabled: true, Since: initAt, After: 5 * time.Minute, Wait: -55 * time.Minute},
		},
		{
			name: "recent pod event: wait for the rest of consolidateAfter",
			nc:   test.NodeClaim("a", "default").Initialized(initAt).LastPodEventTime(now.Add(-2 * time.Minute)).Obj(),
			np:   test.NodePool("default").ConsolidateAfter("5m").Obj(),
			want: consolidation{Enabled: true, Since: now.Add(-2 * time.Minute), After: 5 * time.Minute, Wait: 3 * time.Minute},
		},
		{
			name: "pod event older than initialization (a reused name) is ignored",
			nc:   test.NodeClaim("a", "default").Initialized(now.Add(-time.Minute)).LastPodEventTime(now.Add(-2 * time.Hour)).Obj(),
			np:   test.NodePool("default").ConsolidateAfter("5m").Obj(),
			want: consolidation{Enabled: true, Since: now.Add(-time.Minute), After: 5 * time.Minute, Wait: 4 * time.Minute},
		},
		{
			name: "exactly at consolidateAfter",
			nc:   test.NodeClaim("a", "default").Initialized(initAt).LastPodEventTime(now.Add(-5 * time.Minute)).Obj(),
			np:   test.NodePool("default").ConsolidateAfter("5m").Obj(),
			want: consolidation{Enabled: true, Since: now.Add(-5 * time.Minute), After: 5 * time.Minute, Wait: 0},
		},
		{
			name: "unset consolidateAfter is the API default 0s",
			nc:   test.NodeClaim("a", "default").Initialized(initAt).LastPodEventTime(now).Obj(),
			np:   test.NodePool("default").Obj(),
			want: consolidation{Enabled: true, Since: now, After: 0, Wait: 0},
		},
		{
			name: "Never",
			nc:   test.NodeClaim("a", "default").Initialized(initAt).Obj(),
			np:   test.NodePool("default").ConsolidateAfter(karpv1.Never).Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := consolidationAt(tt.nc, tt.np, clk.Now())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("consolidationAt (-want +got):\n%s", diff)
			}
			if want := tt.want.Enabled && tt.want.Wait <= 0; got.Consolidatable() != want {
				t.Errorf("Consolidatable() = %v, want %v", got.Consolidatable(), want)
			}
		})
	}
}

func TestConsolidationAtAsTimePasses(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	np := test.NodePool("default").ConsolidateAfter("30s").Obj()
	nc := test.NodeClaim("a", "default").Initialized(clk.Now()).Obj()
	var got []bool
	for _, step := range []time.Duration{0, 29 * time.Second, time.Second} {
		clk.Step(step)
		got = append(got, consolidationAt(nc, np, clk.Now()).Consolidatable())
	}
	// A pod lands: the clock starts over from the pod event.
	nc.Status.LastPodEventTime = metav1.NewTime(clk.Now())
	for _, step := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		clk.Step(step)
		got = append(got, consolidationAt(nc, np, clk.Now()).Consolidatable())
	}
	if diff := cmp.Diff([]bool{false, false, true, false, false, true}, got); diff != "" {
		t.Errorf("consolidatable over time (-want +got):\n%s", diff)
	}
}

func TestExpirationAt(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	now := clk.Now()
	tests := []struct {
		name    string
		nc      *karpv1.NodeClaim
		want    expiration
		expired bool
	}{
		{
			name: "young",
			nc:   test.NodeClaim("a", "default").ExpireAfter("24h").CreatedAt(now.Add(-time.Hour)).Obj(),
			want: expiration{Enabled: true, Age: time.Hour, After: 24 * time.Hour, Wait: 23 * time.Hour},
		},
		{
			name:    "exactly expireAfter old",
			nc:      test.NodeClaim("a", "default").ExpireAfter("24h").CreatedAt(now.Add(-24 * time.Hour)).Obj(),
			want:    expiration{Enabled: true, Age: 24 * time.Hour, After: 24 * time.Hour, Wait: 0},
			expired: true,
		},
		{
			name:    "past expireAfter",
			nc:      test.NodeClaim("a", "default").ExpireAfter("1h30m").CreatedAt(now.Add(-2 * time.Hour)).Obj(),
			want:    expiration{Enabled: true, Age: 2 * time.Hour, After: 90 * time.Minute, Wait: -30 * time.Minute},
			expired: true,
		},
		{
			name: "unset is the API default 720h",
			nc:   test.NodeClaim("a", "default").CreatedAt(now.Add(-time.Hour)).Obj(),
			want: expiration{Enabled: true, Age: time.Hour, After: 720 * time.Hour, Wait: 719 * time.Hour},
		},
		{
			name: "Never",
			nc:   test.NodeClaim("a", "default").ExpireAfter(karpv1.Never).CreatedAt(now.Add(-10000 * time.Hour)).Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := expirationAt(tt.nc, clk.Now())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("expirationAt (-want +got):\n%s", diff)
			}
			if got.Expired() != tt.expired {
				t.Errorf("Expired() = %v, want %v", got.Expired(), tt.expired)
			}
		})
	}
}
