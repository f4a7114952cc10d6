package operator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

const (
	karpenterHolder = "karpenter-7d9c5b6f4-abcde_0b1e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"
	selfIdentity    = "dovetail_dovetail-6f7d8-xyz12_5c1f"
)

// leaseHarness is a LeaseWatch on a fake client and clock, with its events, metric and log.
type leaseHarness struct {
	t       *testing.T
	kube    client.Client
	clock   *clocktesting.FakeClock
	events  *record.FakeRecorder
	waiting *prometheus.GaugeVec
	logs    *test.SyncBuffer
	elected chan struct{}
	watch   *LeaseWatch
}

func newLeaseHarness(t *testing.T, leaderElection bool, funcs interceptor.Funcs) *leaseHarness {
	t.Helper()
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).
		WithIndex(&coordinationv1.Lease{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		WithInterceptorFuncs(funcs).Build()
	h := &leaseHarness{t: t, kube: kube, clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)),
		events: record.NewFakeRecorder(100), waiting: metrics.NewForTest().LeaderElectionWaiting, logs: &test.SyncBuffer{},
		elected: make(chan struct{})}
	h.watch = &LeaseWatch{Reader: kube, Identity: selfIdentity, Name: leaderlease.DefaultName, Namespace: "kube-system",
		LegacyNamespace: "kube-system", LeaderElection: leaderElection, Elected: h.elected, Clock: h.clock,
		Logger: NewLogger("info", h.logs), Recorder: h.events, Waiting: h.waiting}
	return h
}

// hold creates or renews a Lease: holder "" releases it.
func (h *leaseHarness) hold(ns, name, holder string) {
	h.t.Helper()
	ctx := context.Background()
	l := &coordinationv1.Lease{}
	err := h.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, l)
	l.Namespace, l.Name = ns, name
	l.Spec.LeaseDurationSeconds = ptr.To[int32](15)
	l.Spec.RenewTime = &metav1.MicroTime{Time: h.clock.Now()}
	l.Spec.HolderIdentity = nil
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	switch {
	case apierrors.IsNotFound(err):
		err = h.kube.Create(ctx, l)
	case err == nil:
		err = h.kube.Update(ctx, l)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *leaseHarness) step() error {
	h.t.Helper()
	return h.watch.Step(context.Background())
}

// drain returns the events recorded since the last call.
func (h *leaseHarness) drain() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *leaseHarness) gauge(kind leaderlease.HolderKind) float64 {
	return testutil.ToFloat64(h.waiting.WithLabelValues(string(kind)))
}

func reasons(events []string) []string {
	var out []string
	for _, e := range events {
		out = append(out, strings.Fields(e)[1])
	}
	return out
}

// TestLeaseWatchKarpenterHoldsSharedLease: while Karpenter renews the shared Lease, the watch says so once (log,
// event, metric) however many times it looks; leader election handles this Lease itself, so Wait does not block;
// when Karpenter stops renewing, the lapse is said once and the metric drops to 0.
func TestLeaseWatchKarpenterHoldsSharedLease(t *testing.T) {
	h := newLeaseHarness(t, true, interceptor.Funcs{})
	for i := range 10 {
		h.hold("kube-system", leaderlease.DefaultName, karpenterHolder)
		if err := h.step(); err != nil {
			t.Fatal(err)
		}
		h.clock.Step(2 * time.Second)
		if i == 0 {
			if got := h.gauge(leaderlease.KindKarpenter); got != 1 {
				t.Errorf("dovetail_leader_election_waiting{holder_kind=karpenter} = %v while Karpenter renews, want 1", got)
			}
		}
	}
	if diff := cmp.Diff([]string{ReasonWaitingForLeaderLease}, reasons(h.drain())); diff != "" {
		t.Errorf("events while Karpenter renews (-want +got):\n%s", diff)
	}
	if n := strings.Count(h.logs.String(), "Karpenter holds the leader lease; Dovetail waits and neither provisions nor disrupts until it lapses"); n != 1 {
		t.Errorf("waiting logged %d times, want once:\n%s", n, h.logs.String())
	}
	if !strings.Contains(h.logs.String(), `"holder":"`+karpenterHolder+`"`) || !strings.Contains(h.logs.String(), `"lease":"kube-system/karpenter-leader-election"`) {
		t.Errorf("the log does not name the holder and the lease:\n%s", h.logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if blocked, err := h.watch.Wait(ctx); err != nil || blocked {
		t.Errorf("Wait blocked on the shared Lease, which leader election handles: %v", err)
	}
	if got := h.watch.Holds(); len(got) != 1 || got[0].Kind != leaderlease.KindKarpenter || got[0].Holder != karpenterHolder {
		t.Errorf("Holds = %v", got)
	}

	// Karpenter stops renewing: 14 s after its last renewal it still holds; 16 s after, it lapsed.
	h.clock.Step(12 * time.Second)
	if err := h.step(); err != nil {
		t.Fatal(err)
	}
	if got := h.drain(); len(got) != 0 {
		t.Errorf("events before the lease lapsed: %v", got)
	}
	h.clock.Step(2 * time.Second)
	if err := h.step(); err != nil {
		t.Fatal(err)
	}
	if err := h.step(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ReasonLeaderLeaseLapsed}, reasons(h.drain())); diff != "" {
		t.Errorf("events after the lease lapsed (-want +got):\n%s", diff)
	}
	if got := h.gauge(leaderlease.KindKarpenter); got != 0 {
		t.Errorf("metric %v after the lapse, want 0", got)
	}
	if n := strings.Count(h.logs.String(), "Karpenter no longer holds the leader lease"); n != 1 {
		t.Errorf("lapse logged %d times, want once:\n%s", n, h.logs.String())
	}
}

// TestLeaseWatchReleaseEndsWaitAtOnce: Karpenter releases the Lease on shutdown (empty holder): no need to wait
// out the duration.
func TestLeaseWatchReleaseEndsWaitAtOnce(t *testing.T) {
	h := newLeaseHarness(t, true, interceptor.Funcs{})
	h.hold("karpenter", leaderlease.DefaultName, karpenterHolder)
	if err := h.step(); err != nil {
		t.Fatal(err)
	}
	h.hold("karpenter", leaderlease.DefaultName, "")
	if err := h.step(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ReasonWaitingForLeaderLease, ReasonLeaderLeaseLapsed}, reasons(h.drain())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestLeaseWatchGates: Wait blocks before the first look, and while a Lease other than the shared one is held by
// another autoscaler: Karpenter in another namespace, or an older Dovetail release on the legacy Lease. It does
// not block on Dovetail replicas (this one or another).
func TestLeaseWatchGates(t *testing.T) {
	for _, tc := range []struct {
		what            string
		ns, name, owner string
		kind            leaderlease.HolderKind
		blocks          bool
	}{
		{"Karpenter in another namespace", "karpenter", leaderlease.DefaultName, karpenterHolder, leaderlease.KindKarpenter, true},
		{"an older Dovetail on the legacy lease", "kube-system", leaderlease.LegacyName, "dovetail-6f7d8-abcde_5c1f", leaderlease.KindOlderDovetail, true},
		{"a legacy lease in another namespace (not read)", "other", leaderlease.LegacyName, "dovetail-6f7d8-abcde_5c1f", "", false},
		{"another Dovetail replica on the shared lease", "kube-system", leaderlease.DefaultName, "dovetail_dovetail-6f7d8-other_9a9a", "", false},
		{"this replica on the shared lease", "kube-system", leaderlease.DefaultName, selfIdentity, "", false},
		{"a Dovetail replica in another namespace", "dovetail", leaderlease.DefaultName, "dovetail_dovetail-1_1", "", false},
	} {
		t.Run(tc.what, func(t *testing.T) {
			h := newLeaseHarness(t, true, interceptor.Funcs{})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, err := h.watch.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Wait before the first look = %v, want to block", err)
			}
			h.hold(tc.ns, tc.name, tc.owner)
			if err := h.step(); err != nil {
				t.Fatal(err)
			}
			ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel2()
			_, err := h.watch.Wait(ctx2)
			if blocked := err != nil; blocked != tc.blocks {
				t.Fatalf("Wait blocked = %v (%v), want %v", blocked, err, tc.blocks)
			}
			if tc.kind != "" {
				if got := h.gauge(tc.kind); got != 1 {
					t.Errorf("metric for %s = %v, want 1", tc.kind, got)
				}
			}
			if !tc.blocks {
				return
			}
			// Wait returns once the holder stops renewing.
			done := make(chan error, 1)
			go func() {
				_, err := h.watch.Wait(context.Background())
				done <- err
			}()
			h.clock.Step(16 * time.Second)
			if err := h.step(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Wait: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Wait did not return after the lease lapsed")
			}
		})
	}
}

// TestLeaseWatchForeignLeaderWhileLeading: Karpenter taking a Lease in another namespace while this replica
// leads (a rollback installed elsewhere), or holding the shared Lease while this replica runs without leader
// election, stops the controller.
func TestLeaseWatchForeignLeaderWhileLeading(t *testing.T) {
	h := newLeaseHarness(t, true, interceptor.Funcs{})
	close(h.elected)
	if err := h.step(); err != nil {
		t.Fatalf("no foreign lease: %v", err)
	}
	h.hold("karpenter", leaderlease.DefaultName, karpenterHolder)
	err := h.step()
	if !errors.Is(err, ErrForeignLeader) || !strings.Contains(err.Error(), "karpenter/karpenter-leader-election") {
		t.Errorf("Step = %v, want ErrForeignLeader naming the lease", err)
	}
	if diff := cmp.Diff([]string{ReasonForeignLeaderWhileLeading}, reasons(h.drain())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	u := newLeaseHarness(t, false, interceptor.Funcs{})
	u.hold("kube-system", leaderlease.DefaultName, karpenterHolder)
	if err := u.step(); !errors.Is(err, ErrForeignLeader) {
		t.Errorf("without leader election, Karpenter on the shared lease: Step = %v, want ErrForeignLeader", err)
	}
}

// TestLeaseWatchListForbidden: without list on leases in all namespaces, the watch says so once and still reads
// the shared Lease in its own namespace.
func TestLeaseWatchListForbidden(t *testing.T) {
	h := newLeaseHarness(t, true, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("RBAC"))
		},
	})
	h.hold("kube-system", leaderlease.DefaultName, karpenterHolder)
	for range 3 {
		if err := h.step(); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(h.logs.String(), "cannot list leader leases in all namespaces"); n != 1 {
		t.Errorf("the missing permission logged %d times, want once:\n%s", n, h.logs.String())
	}
	if got := h.gauge(leaderlease.KindKarpenter); got != 1 {
		t.Errorf("metric = %v, want 1 (the shared lease read with get)", got)
	}
}

// TestLeaseWatchStaleLeaseDoesNotStopLeader: a Lease Karpenter left without releasing it (killed), first seen
// while this replica acts, does not stop the controller; the same Lease renewed does.
func TestLeaseWatchStaleLeaseDoesNotStopLeader(t *testing.T) {
	h := newLeaseHarness(t, false, interceptor.Funcs{})
	h.hold("karpenter", leaderlease.DefaultName, karpenterHolder)
	h.clock.Step(time.Hour) // the lease's renewTime is now an hour old
	for range 3 {
		if err := h.step(); err != nil {
			t.Fatalf("a stale lease stopped the controller: %v", err)
		}
		h.clock.Step(2 * time.Second)
	}
	if got := h.drain(); len(got) != 0 {
		t.Errorf("events about a stale lease: %v", got)
	}
	h.hold("karpenter", leaderlease.DefaultName, karpenterHolder)
	if err := h.step(); !errors.Is(err, ErrForeignLeader) {
		t.Errorf("the lease renewed again: Step = %v, want ErrForeignLeader", err)
	}
}
