package operator

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestUpgradeWaitsForOlderRelease runs client-go's leader election with the controller's lock against a real
// API server while a replica of an older Dovetail build renews the legacy Lease dovetail-leader-election (a
// rolling upgrade): the new replica must not lead, though the shared Lease is free, until the old replica
// releases the legacy Lease on its way out; then it leads under a Dovetail identity.
func TestUpgradeWaitsForOlderRelease(t *testing.T) {
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const old = "dovetail-6f7d8c9b5-abcde_1f2e3d4c-0000-4000-8000-000000000001"
	legacy := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: leaderlease.LegacyName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(old), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	if err := env.Client.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-tick.C:
			}
			l := &coordinationv1.Lease{}
			if err := env.Client.Get(renewCtx, client.ObjectKeyFromObject(legacy), l); err == nil {
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				_ = env.Client.Update(renewCtx, l)
			}
		}
	}()

	logs := &test.SyncBuffer{}
	identity := leaderlease.Identity("dovetail-7a8b9c-fghij", "2")
	watch := &LeaseWatch{Reader: env.Client, Identity: identity, Name: leaderlease.DefaultName, Namespace: "default",
		LegacyNamespace: "default", LeaderElection: true, Elected: make(chan struct{}), Clock: clock.RealClock{},
		Interval: 200 * time.Millisecond, Logger: NewLogger("info", logs)}
	go func() { _ = watch.Start(ctx) }()
	lock, err := newLeaderLock(env.Config, "default", leaderlease.DefaultName, identity, watch, &recorderRef{})
	if err != nil {
		t.Fatal(err)
	}
	leading := make(chan time.Time, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 200 * time.Millisecond,
		ReleaseOnCancel: true, Name: "upgrade-test",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { leading <- time.Now() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	electorDone := make(chan struct{})
	go func() { defer close(electorDone); elector.Run(ctx) }()
	defer func() { cancel(); <-electorDone }()

	// Many retry periods while the old replica renews: the new one must not lead.
	select {
	case <-leading:
		t.Fatalf("the new replica leads while the older release renews %s\n%s", leaderlease.LegacyName, logs.String())
	case <-time.After(3 * time.Second):
	}
	if got := watch.Holds(); len(got) != 1 || got[0].Kind != leaderlease.KindOlderDovetail || got[0].Holder != old {
		t.Errorf("Holds = %v, want the older release on %s", got, leaderlease.LegacyName)
	}

	// The old replica stops and releases its Lease.
	stopRenewing()
	<-renewed
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(legacy), l); err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = nil
	if err := env.Client.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	select {
	case at := <-leading:
		t.Logf("led %s after the older release let go", at.Sub(released).Round(10*time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("the new replica did not lead after the older release let go\n%s", logs.String())
	}
	shared := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: leaderlease.DefaultName}, shared); err != nil {
		t.Fatal(err)
	}
	if h := leaderlease.HolderOf(shared); h != identity {
		t.Errorf("the shared lease's holder is %q, want %q", h, identity)
	}
}
