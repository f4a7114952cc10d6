package interruption

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// fakeQueue records deletions, offerings and reservations marked unavailable.
type fakeQueue struct {
	mu           sync.Mutex
	deleted      []string
	marked       []string
	reservations []string
}

func (q *fakeQueue) MarkReservationUnavailable(_ context.Context, id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reservations = append(q.reservations, id)
}

func (q *fakeQueue) Receive(context.Context) ([]cloudprovider.QueueMessage, error) { return nil, nil }
func (q *fakeQueue) Delete(_ context.Context, m cloudprovider.QueueMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleted = append(q.deleted, m.ID)
	return nil
}
func (q *fakeQueue) MarkOfferingUnavailable(_ context.Context, _, instanceType, zone, capacityType string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.marked = append(q.marked, instanceType+"/"+zone+"/"+capacityType)
}

type fixture struct {
	c     *Controller
	kube  client.Client
	clock *clocktesting.FakeClock
	queue *fakeQueue
	rec   *record.FakeRecorder
	m     *metrics.Metrics
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		kube:  clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)),
		queue: &fakeQueue{}, rec: record.NewFakeRecorder(100), m: metrics.NewForTest(),
	}
	f.c = NewController(deps.Deps{Client: f.kube, Clock: f.clock, Recorder: f.rec, Metrics: f.m, InterruptionQueue: f.queue,
		Settings: &settings.Settings{ClusterName: "test", InterruptionQueue: "test"}})
	return f
}

func (f *fixture) handle(t *testing.T, msgs ...cloudprovider.QueueMessage) {
	t.Helper()
	if err := f.c.Handle(context.Background(), msgs); err != nil {
		t.Fatalf("Handle: %v", err)
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

func spotNodeClaim(name, pool, instanceID string) *karpv1.NodeClaim {
	return test.NodeClaim(name, pool).ProviderID("aws:///us-west-2a/"+instanceID).NodeName(name+"-node").
		Finalizer(karpv1.TerminationFinalizer).Label(corev1.LabelInstanceTypeStable, "m5.large").
		Label(corev1.LabelTopologyZone, "us-west-2a").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).Obj()
}

func msg(id, body string) cloudprovider.QueueMessage {
	return cloudprovider.QueueMessage{ID: id, Body: body, Handle: "h-" + id}
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func TestSpotInterruptionDefaultDrains(t *testing.T) {
	f := newFixture(t, test.NodePool("default").Obj(), spotNodeClaim("a", "default", "i-a"),
		test.Node("a-node", "aws:///us-west-2a/i-a").Obj())
	f.handle(t, msg("m1", test.SpotInterruptionEvent("i-a")))

	if nc := f.nodeClaim(t, "a"); nc.DeletionTimestamp == nil {
		t.Errorf("nodeclaim a is not being deleted")
	}
	if diff := cmp.Diff([]string{"m1"}, f.queue.deleted); diff != "" {
		t.Errorf("deleted messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"m5.large/us-west-2a/spot"}, f.queue.marked); diff != "" {
		t.Errorf("offerings marked unavailable (-want +got):\n%s", diff)
	}
	events := f.events()
	if n := strings.Count(strings.Join(events, "\n"), "Warning SpotInterrupted"); n != 2 {
		t.Errorf("want a SpotInterrupted event on the NodeClaim and on the Node, got %q", events)
	}
	if got := testutil.ToFloat64(f.m.NodeClaimsDisrupted.WithLabelValues("spot_interrupted", "default", "spot", "", metrics.TerminationModeGraceful)); got != 1 {
		t.Errorf("nodeclaims disrupted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.m.InterruptionReceivedMessages.WithLabelValues("spot_interrupted")); got != 1 {
		t.Errorf("received spot_interrupted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.m.InterruptionDeletedMessages); got != 1 {
		t.Errorf("deleted messages metric = %v, want 1", got)
	}
}

// TestCapacityReservationInterruptionDrains: as Karpenter's AWS provider, EC2's capacity reservation interruption
// warning drains and deletes the NodeClaim, warns CapacityReservationInstanceInterrupted on it and its Node, counts
// the message as capacity_reservation_interrupted, and takes no more launches into the reservation; the spot
// offering cache is left alone.
func TestCapacityReservationInterruptionDrains(t *testing.T) {
	reserved := test.NodeClaim("a", "default").ProviderID("aws:///us-west-2a/i-a").NodeName("a-node").
		Finalizer(karpv1.TerminationFinalizer).Label(corev1.LabelInstanceTypeStable, "p5.48xlarge").
		Label(corev1.LabelTopologyZone, "us-west-2a").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeReserved).
		Label(awsv1.LabelCapacityReservationID, "cr-0123456789abcdef0").Obj()
	f := newFixture(t, test.NodePool("default").Obj(), reserved, test.Node("a-node", "aws:///us-west-2a/i-a").Obj())
	f.handle(t, msg("m1", test.CapacityReservationInterruptionEvent("i-a")))

	if nc := f.nodeClaim(t, "a"); nc.DeletionTimestamp == nil {
		t.Errorf("nodeclaim a is not being deleted")
	}
	if diff := cmp.Diff([]string{"cr-0123456789abcdef0"}, f.queue.reservations); diff != "" {
		t.Errorf("reservations marked unavailable (-want +got):\n%s", diff)
	}
	if len(f.queue.marked) != 0 {
		t.Errorf("offerings marked unavailable %v, want none", f.queue.marked)
	}
	events := f.events()
	if n := strings.Count(strings.Join(events, "\n"), "Warning CapacityReservationInstanceInterrupted"); n != 2 {
		t.Errorf("want a CapacityReservationInstanceInterrupted event on the NodeClaim and on the Node, got %q", events)
	}
	if got := testutil.ToFloat64(f.m.InterruptionReceivedMessages.WithLabelValues("capacity_reservation_interrupted")); got != 1 {
		t.Errorf("received capacity_reservation_interrupted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.m.NodeClaimsDisrupted.WithLabelValues("capacity_reservation_interrupted", "default", "reserved", "", metrics.TerminationModeGraceful)); got != 1 {
		t.Errorf("nodeclaims disrupted = %v, want 1", got)
	}
}

func TestSpotInterruptionIgnoreOnlyRecordsAnEvent(t *testing.T) {
	f := newFixture(t, test.NodePool("stateful").Annotation(interruption.SpotInterruptionAnnotation, "Ignore").Obj(),
		spotNodeClaim("a", "stateful", "i-a"))
	f.handle(t, msg("m1", test.SpotInterruptionEvent("i-a")))

	if nc := f.nodeClaim(t, "a"); nc.DeletionTimestamp != nil {
		t.Errorf("nodeclaim a is being deleted despite %s=Ignore", interruption.SpotInterruptionAnnotation)
	}
	if diff := cmp.Diff([]string{"m1"}, f.queue.deleted); diff != "" {
		t.Errorf("deleted messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"m5.large/us-west-2a/spot"}, f.queue.marked); diff != "" {
		t.Errorf("offerings marked unavailable (-want +got):\n%s", diff)
	}
	if events := f.events(); !hasEvent(events, "Warning SpotInterrupted Spot interruption warning; dovetail.sh/spot-interruption=Ignore") {
		t.Errorf("events %q lack the SpotInterrupted event naming the Ignore policy", events)
	}
}

func TestForeignMessagesAreLeftAndCountedOnce(t *testing.T) {
	f := newFixture(t, test.NodePool("default").Obj(), spotNodeClaim("a", "default", "i-a"))
	for range 2 {
		f.handle(t, msg("m1", test.SpotInterruptionEvent("i-other")))
	}
	if len(f.queue.deleted) != 0 || len(f.queue.marked) != 0 {
		t.Errorf("a foreign message was acted on: deleted %v, marked %v", f.queue.deleted, f.queue.marked)
	}
	if nc := f.nodeClaim(t, "a"); nc.DeletionTimestamp != nil {
		t.Errorf("nodeclaim a deleted for another cluster's instance")
	}
	if got := testutil.ToFloat64(f.m.InterruptionForeignMessages); got != 1 {
		t.Errorf("foreign messages = %v, want 1 (counted once)", got)
	}
}

func TestScheduledChangeDrainsBeforeStart(t *testing.T) {
	f := newFixture(t, test.NodePool("default").Annotation(interruption.ScheduledChangeAnnotation, "DrainBeforeStart").Obj(),
		spotNodeClaim("a", "default", "i-a"),
		test.NodeClaim("b", "default").ProviderID("aws:///us-west-2a/i-b").TerminationGracePeriod(5*time.Minute).
			Finalizer(karpv1.TerminationFinalizer).Obj())
	start := f.clock.Now().Add(time.Hour)
	f.handle(t, msg("m1", test.HealthScheduledChangeEvent("i-a", start)), msg("m2", test.HealthScheduledChangeEvent("i-b", start)))

	for name, want := range map[string]time.Time{"a": start.Add(-15 * time.Minute), "b": start.Add(-5 * time.Minute)} {
		nc := f.nodeClaim(t, name)
		if nc.DeletionTimestamp != nil {
			t.Errorf("nodeclaim %s deleted before its drain time", name)
		}
		if got := nc.Annotations[interruption.DeleteAtAnnotation]; got != want.Format(time.RFC3339) {
			t.Errorf("nodeclaim %s %s = %q, want %s", name, interruption.DeleteAtAnnotation, got, want.Format(time.RFC3339))
		}
	}
	if diff := cmp.Diff([]string{"m1", "m2"}, f.queue.deleted); diff != "" {
		t.Errorf("deleted messages (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	f.clock.Step(45*time.Minute - time.Second)
	if err := f.c.DeleteDue(ctx); err != nil {
		t.Fatal(err)
	}
	if f.nodeClaim(t, "a").DeletionTimestamp != nil {
		t.Errorf("nodeclaim a deleted a second before its drain time")
	}
	f.clock.Step(time.Second)
	if err := f.c.DeleteDue(ctx); err != nil {
		t.Fatal(err)
	}
	if f.nodeClaim(t, "a").DeletionTimestamp == nil {
		t.Errorf("nodeclaim a not deleted at its drain time")
	}
	if f.nodeClaim(t, "b").DeletionTimestamp != nil {
		t.Errorf("nodeclaim b (terminationGracePeriod 5m) deleted 15 minutes before the start")
	}
	f.clock.Step(10 * time.Minute)
	if err := f.c.DeleteDue(ctx); err != nil {
		t.Fatal(err)
	}
	if f.nodeClaim(t, "b").DeletionTimestamp == nil {
		t.Errorf("nodeclaim b not deleted 5 minutes before the start")
	}
}

func TestScheduledChangePolicies(t *testing.T) {
	f := newFixture(t,
		test.NodePool("drain").Annotation(interruption.ScheduledChangeAnnotation, "Drain").Obj(),
		test.NodePool("ignore").Annotation(interruption.ScheduledChangeAnnotation, "Ignore").Obj(),
		test.NodePool("default").Obj(),
		spotNodeClaim("a", "drain", "i-a"), spotNodeClaim("b", "ignore", "i-b"), spotNodeClaim("c", "default", "i-c"))
	start := f.clock.Now().Add(time.Hour)
	f.handle(t, msg("m1", test.HealthScheduledChangeEvent("i-a", start)), msg("m2", test.HealthScheduledChangeEvent("i-b", start)),
		msg("m3", test.HealthScheduledChangeEvent("i-c", start)))
	if f.nodeClaim(t, "a").DeletionTimestamp == nil {
		t.Errorf("nodeclaim a (Drain) not deleted at once")
	}
	if c := f.nodeClaim(t, "c"); c.DeletionTimestamp == nil || c.Annotations[interruption.DeleteAtAnnotation] != "" {
		t.Errorf("nodeclaim c (no annotation: Drain, as Karpenter) not deleted at once: %v", c.Annotations)
	}
	b := f.nodeClaim(t, "b")
	if b.DeletionTimestamp != nil || b.Annotations[interruption.DeleteAtAnnotation] != "" {
		t.Errorf("nodeclaim b (Ignore) deleted or scheduled: %v", b.Annotations)
	}
	if events := f.events(); !hasEvent(events, "Warning ScheduledChange AWS Health scheduled change AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED") {
		t.Errorf("events %q lack ScheduledChange", events)
	}
}

func TestStateChangeRebalanceMalformedAndInvalidPolicy(t *testing.T) {
	f := newFixture(t, test.NodePool("default").Annotation(interruption.SpotInterruptionAnnotation, "Sometimes").Obj(),
		spotNodeClaim("a", "default", "i-a"), spotNodeClaim("b", "default", "i-b"), spotNodeClaim("c", "default", "i-c"),
		spotNodeClaim("d", "default", "i-d"))
	f.handle(t,
		msg("stopping", test.StateChangeEvent("i-a", "stopping")),
		msg("running", test.StateChangeEvent("i-b", "running")),
		msg("rebalance", test.RebalanceEvent("i-c")),
		msg("bad", `{"detail-type":`),
		// Over SQS's 1 MiB: a spot warning for i-d padded past the limit is not read, let alone acted on.
		msg("huge", test.SpotInterruptionEvent("i-d")+strings.Repeat(" ", interruption.MaxBodyBytes)),
		msg("spot", test.SpotInterruptionEvent("i-d")),
	)
	for name, deleting := range map[string]bool{"a": true, "b": false, "c": false, "d": true} {
		if got := f.nodeClaim(t, name).DeletionTimestamp != nil; got != deleting {
			t.Errorf("nodeclaim %s deleting = %v, want %v", name, got, deleting)
		}
	}
	if diff := cmp.Diff([]string{"stopping", "running", "rebalance", "bad", "huge", "spot"}, f.queue.deleted); diff != "" {
		t.Errorf("deleted messages (-want +got):\n%s", diff)
	}
	events := f.events()
	for _, want := range []string{
		"Warning InstanceStopping Instance state changed to stopping",
		"Warning TerminatingOnInterruption",
		"Normal SpotRebalanceRecommendation",
		`Warning InvalidInterruptionPolicy annotation dovetail.sh/spot-interruption has invalid value "Sometimes"; allowed values are Drain, Ignore; using the default Drain`,
	} {
		if !hasEvent(events, want) {
			t.Errorf("events %q lack %q", events, want)
		}
	}
	if got := testutil.ToFloat64(f.m.InterruptionReceivedMessages.WithLabelValues("malformed")); got != 2 {
		t.Errorf("received malformed = %v, want 2 (the bad and the oversized message)", got)
	}
}

func TestRegisterIsANoOpWithoutAQueue(t *testing.T) {
	c := NewController(deps.Deps{Settings: &settings.Settings{ClusterName: "test"}})
	if err := c.Register(context.Background(), nil); err != nil {
		t.Errorf("Register without INTERRUPTION_QUEUE = %v, want nil", err)
	}
}
