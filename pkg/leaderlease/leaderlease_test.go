package leaderlease

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func lease(ns, name, holder string, renew time.Time, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(seconds), RenewTime: &metav1.MicroTime{Time: renew}}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	return l
}

// TestClassify: Dovetail identities carry the prefix whatever the pod is called (a release named karpenter
// runs pods named karpenter-...); any other holder of the shared name is Karpenter; any holder of the legacy
// name is an older Dovetail.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, holder string
		want         HolderKind
	}{
		{DefaultName, Identity("karpenter-5d9f7c8b4-x2x9q", "0b1e4c1a"), KindDovetail},
		{DefaultName, Identity("dovetail-7c9d-abcde", "1"), KindDovetail},
		{DefaultName, "karpenter-7d9c5b6f4-abcde_0b1e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b", KindKarpenter},
		{DefaultName, "dovetail-7d9c5b6f4-abcde_0b1e4c1a", KindKarpenter}, // a pod name, not the identity prefix
		{LegacyName, "dovetail-7d9c5b6f4-abcde_0b1e4c1a", KindOlderDovetail},
		{LegacyName, Identity("dovetail-7d9c", "1"), KindDovetail},
		{"custom", "anything", KindKarpenter},
	} {
		if got := Classify(tc.name, tc.holder); got != tc.want {
			t.Errorf("Classify(%q, %q) = %q, want %q", tc.name, tc.holder, got, tc.want)
		}
	}
	if id := Identity("host", "uid"); id != "dovetail_host_uid" || !IsDovetail(id) {
		t.Errorf("Identity = %q", id)
	}
}

// TestRenewed: a single look trusts the recorded renewal time and the Lease's duration.
func TestRenewed(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		what  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"renewed 5s ago, 15s lease", lease("ns", DefaultName, "k_1", now.Add(-5*time.Second), 15), true},
		{"renewed 16s ago, 15s lease", lease("ns", DefaultName, "k_1", now.Add(-16*time.Second), 15), false},
		{"released (no holder)", lease("ns", DefaultName, "", now, 15), false},
		{"no duration: 15s default", lease("ns", DefaultName, "k_1", now.Add(-10*time.Second), 0), true},
	} {
		if got := Renewed(tc.lease, now); got != tc.want {
			t.Errorf("%s: Renewed = %v, want %v", tc.what, got, tc.want)
		}
	}
}

// TestTracker: a Lease is held while its record keeps changing within its duration on the tracker's clock,
// whatever time the holder writes; it lapses a duration after the last change, and at once when released.
func TestTracker(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	tr := NewTracker(clk)
	// The holder's clock is an hour behind: its renewTime looks stale, yet it renews.
	skewed := clk.Now().Add(-time.Hour)
	l := lease("kube-system", DefaultName, "karpenter-1_a", skewed, 15)
	if !tr.Held(l) {
		t.Fatal("a Lease seen for the first time is not held")
	}
	for i := 1; i <= 10; i++ {
		clk.Step(10 * time.Second)
		l.Spec.RenewTime = &metav1.MicroTime{Time: skewed.Add(time.Duration(i) * 10 * time.Second)}
		if !tr.Held(l) {
			t.Fatalf("renewal %d: not held", i)
		}
	}
	clk.Step(14 * time.Second)
	if !tr.Held(l) {
		t.Error("14 s after the last renewal of a 15 s Lease: not held")
	}
	clk.Step(2 * time.Second)
	if tr.Held(l) {
		t.Error("16 s after the last renewal of a 15 s Lease: still held")
	}
	// A new holder is a change: held again.
	l.Spec.HolderIdentity = ptr.To("karpenter-2_b")
	if !tr.Held(l) {
		t.Error("a new holder is not held")
	}
	l.Spec.HolderIdentity = nil
	if tr.Held(l) {
		t.Error("a released Lease is held")
	}
	// Keep forgets Leases that are gone: seen again, a Lease counts as just renewed.
	l.Spec.HolderIdentity = ptr.To("karpenter-2_b")
	tr.Held(l)
	clk.Step(time.Minute)
	tr.Keep(map[string]bool{})
	if !tr.Held(l) {
		t.Error("a forgotten Lease seen again is not held")
	}
}

// TestTrackerRenewing: a Lease left by a dead holder (old renewal, never changing) is held for one duration
// after it is first seen but is never renewing; a holder seen renewing, or whose recorded renewal is recent, is.
func TestTrackerRenewing(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	tr := NewTracker(clk)
	stale := lease("karpenter", DefaultName, "karpenter-1_a", clk.Now().Add(-time.Hour), 15)
	if !tr.Held(stale) || tr.Renewing(stale) {
		t.Errorf("a stale Lease first seen: held %v renewing %v, want held, not renewing", tr.Held(stale), tr.Renewing(stale))
	}
	fresh := lease("kube-system", DefaultName, "karpenter-1_a", clk.Now().Add(-time.Second), 15)
	if !tr.Held(fresh) || !tr.Renewing(fresh) {
		t.Error("a Lease renewed a second ago is not renewing")
	}
	// The stale one's holder (an hour behind) renews while watched: renewing.
	clk.Step(2 * time.Second)
	stale.Spec.RenewTime = &metav1.MicroTime{Time: stale.Spec.RenewTime.Add(2 * time.Second)}
	if !tr.Held(stale) || !tr.Renewing(stale) {
		t.Error("a Lease renewed while watched is not renewing")
	}
	// A new holder starts over.
	stale.Spec.HolderIdentity = ptr.To("karpenter-2_b")
	if !tr.Held(stale) || tr.Renewing(stale) {
		t.Error("a new holder with an old renewal time counts as renewing")
	}
}
