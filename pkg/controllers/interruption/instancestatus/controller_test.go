package instancestatus

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

type fakeLister struct {
	mu       sync.Mutex
	statuses []cloudprovider.InstanceStatus
	calls    int
}

func (f *fakeLister) UnhealthyInstances(context.Context) ([]cloudprovider.InstanceStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.statuses, nil
}

func (f *fakeLister) set(s ...cloudprovider.InstanceStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = s
}

type fixture struct {
	c      *Controller
	kube   client.Client
	clock  *clocktesting.FakeClock
	lister *fakeLister
	rec    *record.FakeRecorder
	m      *metrics.Metrics
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		kube:   clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
		clock:  clocktesting.NewFakeClock(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)),
		lister: &fakeLister{}, rec: record.NewFakeRecorder(100), m: metrics.NewForTest(),
	}
	f.c = NewController(deps.Deps{Client: f.kube, Clock: f.clock, Recorder: f.rec, Metrics: f.m, InstanceStatus: f.lister})
	return f
}

func (f *fixture) poll(t *testing.T) {
	t.Helper()
	if err := f.c.Poll(context.Background()); err != nil {
		t.Fatalf("Poll: %v", err)
	}
}

func (f *fixture) nodeClaim(t *testing.T, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := f.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func nodeClaim(name, instanceID string) *karpv1.NodeClaim {
	return test.NodeClaim(name, "default").ProviderID("aws:///us-west-2a/"+instanceID).NodeName(name+"-node").
		Finalizer(karpv1.TerminationFinalizer).Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand).Obj()
}

func impaired(id string, cat cloudprovider.StatusCategory, since time.Time) cloudprovider.InstanceStatus {
	return cloudprovider.InstanceStatus{InstanceID: id, Checks: []cloudprovider.StatusCheck{{Category: cat, Name: "reachability", ImpairedSince: since}}}
}

// TestImpairedInstanceIsReplacedAfterThreshold: a failing instance check is tolerated for two minutes, then the
// NodeClaim gets a termination deadline of now (no waiting on PDBs), the reason annotation, and is deleted; the
// metric counts the instance once, and InstanceUnhealthy is recorded on the NodeClaim and its Node.
func TestImpairedInstanceIsReplacedAfterThreshold(t *testing.T) {
	f := newFixture(t, nodeClaim("a", "i-a"), nodeClaim("b", "i-b"), test.Node("a-node", "aws:///us-west-2a/i-a").Obj())
	since := f.clock.Now()
	f.lister.set(impaired("i-a", cloudprovider.StatusCategoryInstance, since), impaired("i-foreign", cloudprovider.StatusCategorySystem, since.Add(-time.Hour)))
	f.poll(t)
	if nc := f.nodeClaim(t, "a"); nc.DeletionTimestamp != nil {
		t.Fatal("nodeclaim a deleted before the threshold")
	}
	f.clock.Step(119 * time.Second)
	f.poll(t)
	if nc := f.nodeClaim(t, "a"); nc.DeletionTimestamp != nil {
		t.Fatal("nodeclaim a deleted at 119s")
	}
	f.clock.Step(time.Second)
	f.poll(t)
	nc := f.nodeClaim(t, "a")
	if nc.DeletionTimestamp == nil {
		t.Fatal("nodeclaim a not deleted at 120s")
	}
	if got := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != f.clock.Now().Format(time.RFC3339) {
		t.Errorf("termination timestamp %q, want now", got)
	}
	if !strings.Contains(nc.Annotations[interruption.InstanceUnhealthyAnnotation], "InstanceStatus check reachability failing since") {
		t.Errorf("reason annotation %q", nc.Annotations[interruption.InstanceUnhealthyAnnotation])
	}
	if nc := f.nodeClaim(t, "b"); nc.DeletionTimestamp != nil {
		t.Error("healthy nodeclaim b deleted")
	}
	ev := f.events()
	if len(ev) != 2 || !strings.HasPrefix(ev[0], "Warning InstanceUnhealthy ") || !strings.HasPrefix(ev[1], "Warning InstanceUnhealthy ") {
		t.Errorf("events %q, want InstanceUnhealthy on the NodeClaim and the Node", ev)
	}
	// Polled again while still impaired: counted once, no new event.
	f.clock.Step(Interval)
	f.poll(t)
	if got := testutil.ToFloat64(f.c.unhealthy.WithLabelValues("InstanceStatus")); got != 1 {
		t.Errorf("unhealthy{InstanceStatus} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.c.unhealthy.WithLabelValues("SystemStatus")); got != 0 {
		t.Errorf("unhealthy{SystemStatus} = %v, want 0 (the foreign instance is not this cluster's)", got)
	}
	if got := testutil.ToFloat64(f.m.NodeClaimsDisrupted.WithLabelValues("instance_status", "default", karpv1.CapacityTypeOnDemand, "", metrics.TerminationModeGraceful)); got != 1 {
		t.Errorf("nodeclaims_disrupted{instance_status} = %v, want 1", got)
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events on the second poll: %q", ev)
	}
	// Healthy again, then impaired again: counted again.
	f.lister.set()
	f.poll(t)
	f.lister.set(impaired("i-a", cloudprovider.StatusCategoryInstance, since))
	f.poll(t)
	if got := testutil.ToFloat64(f.c.unhealthy.WithLabelValues("InstanceStatus")); got != 2 {
		t.Errorf("unhealthy{InstanceStatus} = %v after a recovery and a new failure, want 2", got)
	}
}

// TestScheduledEventDrainsNormally: a scheduled event deletes the NodeClaim at once, without a termination
// deadline (the drain honours PodDisruptionBudgets).
func TestScheduledEventDrainsNormally(t *testing.T) {
	f := newFixture(t, nodeClaim("a", "i-a"))
	f.lister.set(cloudprovider.InstanceStatus{InstanceID: "i-a", Checks: []cloudprovider.StatusCheck{
		{Category: cloudprovider.StatusCategoryEvent, Name: "system-maintenance", NotBefore: f.clock.Now().Add(96 * time.Hour)}}})
	f.poll(t)
	nc := f.nodeClaim(t, "a")
	if nc.DeletionTimestamp == nil {
		t.Fatal("nodeclaim not deleted for a scheduled event")
	}
	if _, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t.Error("a scheduled event set a termination deadline")
	}
	if got := testutil.ToFloat64(f.c.unhealthy.WithLabelValues("EventStatus")); got != 1 {
		t.Errorf("unhealthy{EventStatus} = %v, want 1", got)
	}
	if d := cmp.Diff([]string{"Warning InstanceUnhealthy EC2 reports scheduled event system-maintenance from 2026-12-03T07:00:00Z: draining and deleting the NodeClaim"}, f.events()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// TestRunPollsEveryInterval: the loop polls at once and then every Interval of the injected clock.
func TestRunPollsEveryInterval(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.c.runnable().Start(ctx) }()
	calls := func() int {
		f.lister.mu.Lock()
		defer f.lister.mu.Unlock()
		return f.lister.calls
	}
	for want := 1; want <= 3; want++ {
		deadline := time.Now().Add(10 * time.Second)
		for calls() < want || !f.clock.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatalf("%d polls, want %d", calls(), want)
			}
			time.Sleep(time.Millisecond)
		}
		f.clock.Step(Interval)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
