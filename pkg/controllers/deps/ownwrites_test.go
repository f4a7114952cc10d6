package deps_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestOwnWritesLatest(t *testing.T) {
	at := func(rv string, uid types.UID) *karpv1.NodeClaim {
		nc := test.NodeClaim("a", "default").Obj()
		nc.ResourceVersion, nc.UID = rv, uid
		nc.Labels["rv"] = rv
		return nc
	}
	for _, tc := range []struct {
		name       string
		wrote      *karpv1.NodeClaim
		age        time.Duration
		cached     *karpv1.NodeClaim
		wantRV     string
		wantBehind bool
	}{
		{name: "nothing written", cached: at("10", "u1"), wantRV: "10"},
		{name: "cache behind the write", wrote: at("12", "u1"), cached: at("10", "u1"), wantRV: "12", wantBehind: true},
		{name: "cache behind by digits", wrote: at("100", "u1"), cached: at("99", "u1"), wantRV: "100", wantBehind: true},
		{name: "cache at the write", wrote: at("12", "u1"), cached: at("12", "u1"), wantRV: "12"},
		{name: "cache past the write", wrote: at("12", "u1"), cached: at("15", "u1"), wantRV: "15"},
		{name: "object recreated", wrote: at("12", "u1"), cached: at("10", "u2"), wantRV: "10"},
		{name: "write too old to trust", wrote: at("12", "u1"), age: time.Minute, cached: at("10", "u1"), wantRV: "10"},
		{name: "versions not the API server's", wrote: at("b", "u1"), cached: at("a", "u1"), wantRV: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
			w := deps.NewOwnWrites[*karpv1.NodeClaim](clk, time.Minute)
			if tc.wrote != nil {
				w.Wrote(tc.wrote)
				tc.wrote.Labels["rv"] = "changed after the write"
			}
			clk.Step(tc.age)
			got, behind := w.Latest(tc.cached)
			if got.ResourceVersion != tc.wantRV || behind != tc.wantBehind {
				t.Errorf("Latest = version %s, behind %v; want %s, %v", got.ResourceVersion, behind, tc.wantRV, tc.wantBehind)
			}
			if got.Labels["rv"] != got.ResourceVersion {
				t.Errorf("Latest returned an object changed after it was recorded: %v", got.Labels)
			}
			if !tc.wantBehind && w.Len() != 0 {
				t.Errorf("%d entries kept once the cache was believed, want 0", w.Len())
			}
			if tc.wantBehind {
				got.Labels["rv"] = "changed by the pass"
				again, _ := w.Latest(tc.cached)
				if again.Labels["rv"] != tc.wantRV {
					t.Errorf("a pass's change reached the memo: %v", again.Labels)
				}
			}
		})
	}
}

func TestOwnWritesKeepsTheLatestWrite(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	w := deps.NewOwnWrites[*karpv1.NodeClaim](clk, time.Minute)
	nc := test.NodeClaim("a", "default").Obj()
	nc.UID = "u1"
	for _, rv := range []string{"12", "11", ""} {
		c := nc.DeepCopy()
		c.ResourceVersion = rv
		w.Wrote(c)
	}
	cached := nc.DeepCopy()
	cached.ResourceVersion = "9"
	if got, _ := w.Latest(cached); got.ResourceVersion != "12" {
		t.Errorf("Latest = version %s after writes 12 then 11 (recorded out of order), want 12", got.ResourceVersion)
	}
	w.Forget("a")
	if got, behind := w.Latest(cached); behind || got.ResourceVersion != "9" {
		t.Errorf("after Forget: version %s, behind %v; want the cached 9", got.ResourceVersion, behind)
	}
}

func TestOwnWritesSweepsExpired(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	w := deps.NewOwnWrites[*karpv1.NodeClaim](clk, time.Minute)
	for _, name := range []string{"a", "b", "c"} {
		nc := test.NodeClaim(name, "default").Obj()
		nc.ResourceVersion = "5"
		w.Wrote(nc)
	}
	clk.Step(time.Minute)
	nc := test.NodeClaim("d", "default").Obj()
	nc.ResourceVersion = "6"
	w.Wrote(nc)
	if w.Len() != 1 {
		t.Errorf("%d entries after the others expired, want 1", w.Len())
	}
}

func TestNewerVersionAgreesWithTheAPIServerOrder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"10", "9", true}, {"9", "10", false}, {"10", "10", false}, {"123", "122", true},
		{"", "1", false}, {"1", "", false}, {"01", "1", false}, {"1a", "1", false}, {"0", "0", false},
	} {
		if got := deps.NewerVersion(tc.a, tc.b); got != tc.want {
			t.Errorf("NewerVersion(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if c, err := resourceversion.CompareResourceVersion(tc.a, tc.b); err == nil && (c > 0) != tc.want {
			t.Errorf("NewerVersion(%q, %q) = %v, CompareResourceVersion says %d", tc.a, tc.b, tc.want, c)
		}
	}
}
