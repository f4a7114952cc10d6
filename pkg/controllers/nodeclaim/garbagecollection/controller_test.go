package garbagecollection

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

func launched(name, providerID string) *karpv1.NodeClaim {
	nc := test.NodeClaim(name, "default").ProviderID(providerID).Finalizer(karpv1.TerminationFinalizer).Obj()
	nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
	return nc
}

func TestGarbageCollection(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cloud := fake.New(clk)
	kept := cloud.AddInstance(test.NodeClaim("kept", "default").Obj())
	leaked := cloud.AddInstance(test.NodeClaim("leaked", "default").Obj())
	gone := "fake:///test-zone-a/i-gone"

	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		launched("kept", kept),
		launched("gone", gone),
		// Not launched yet: never deleted for a missing instance.
		test.NodeClaim("pending", "default").Obj(),
	).Build()
	c := NewController(deps.Deps{Client: kube, CloudProvider: cloud, Clock: clk, Recorder: record.NewFakeRecorder(10), Metrics: metrics.NewForTest()})

	clk.Step(LeakGracePeriod + time.Second)
	// Launched after the clock moved: still within the grace period.
	young := cloud.AddInstance(test.NodeClaim("young", "default").Obj())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if diff := cmp.Diff([]string{leaked}, cloud.Deleted()); diff != "" {
		t.Errorf("terminated instances (-want +got):\n%s", diff)
	}
	list := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	var deleting, live []string
	for _, nc := range list.Items {
		if nc.DeletionTimestamp != nil {
			deleting = append(deleting, nc.Name)
		} else {
			live = append(live, nc.Name)
		}
	}
	sort.Strings(live)
	if diff := cmp.Diff([]string{"gone"}, deleting); diff != "" {
		t.Errorf("deleted nodeclaims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kept", "pending"}, live); diff != "" {
		t.Errorf("remaining nodeclaims (-want +got):\n%s", diff)
	}
	// The young instance is collected once it is past the grace period.
	clk.Step(LeakGracePeriod)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	if diff := cmp.Diff([]string{leaked, young}, cloud.Deleted()); diff != "" {
		t.Errorf("terminated instances after grace period (-want +got):\n%s", diff)
	}
}

// An instance the cloud is already terminating (our own termination a moment ago: EC2's shutting-down) is not a
// leak, whether or not its NodeClaim is still there.
func TestGarbageCollectionLeavesTerminatingInstancesAlone(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cloud := fake.New(clk)
	orphan := cloud.AddInstance(test.NodeClaim("scaled-in", "default").Obj())
	cloud.SetTerminating(orphan)
	draining := cloud.AddInstance(test.NodeClaim("deleting", "default").Obj())
	cloud.SetTerminating(draining)
	leaked := cloud.AddInstance(test.NodeClaim("leaked", "default").Obj())
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(launched("deleting", draining)).Build()
	rec := record.NewFakeRecorder(10)
	c := NewController(deps.Deps{Client: kube, CloudProvider: cloud, Clock: clk, Recorder: rec, Metrics: metrics.NewForTest()})

	clk.Step(LeakGracePeriod + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if diff := cmp.Diff([]string{leaked}, cloud.Deleted()); diff != "" {
		t.Errorf("terminated instances (-want +got):\n%s", diff)
	}
	list := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].DeletionTimestamp != nil {
		t.Errorf("the NodeClaim of a terminating instance was touched: %+v", list.Items)
	}
	if len(rec.Events) != 0 {
		t.Errorf("events: %v", <-rec.Events)
	}
}

// The cache may lag behind the API server: an instance whose NodeClaim the cache does not show (or shows without
// its provider ID) is terminated only once the API server confirms that no NodeClaim holds it.
func TestGarbageCollectionConfirmsWithTheAPIServer(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cloud := fake.New(clk)
	recorded := cloud.AddInstance(test.NodeClaim("recorded", "default").Obj())
	cloud.AddInstance(test.NodeClaim("recording", "default").Obj())
	relaunched := cloud.AddInstance(test.NodeClaim("relaunched", "default").Obj())
	leaked := cloud.AddInstance(test.NodeClaim("leaked", "default").Obj())
	// The cache shows none of them yet.
	cached := clientfake.NewClientBuilder().WithScheme(scheme).Build()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		launched("recorded", recorded),
		test.NodeClaim("recording", "default").Obj(),
		launched("relaunched", "fake:///test-zone-a/i-other"),
	).Build()
	c := NewController(deps.Deps{Client: cached, APIReader: api, CloudProvider: cloud, Clock: clk,
		Recorder: record.NewFakeRecorder(10), Metrics: metrics.NewForTest()})

	clk.Step(LeakGracePeriod + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	want := []string{relaunched, leaked}
	sort.Strings(want)
	got := cloud.Deleted()
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("terminated instances (-want +got):\n%s", diff)
	}
}

// An instance launched for a NodeClaim whose status does not name it yet (the launch's status write failed, e.g.
// while the API server was down) is that NodeClaim's launch, not a leak: it is kept past the grace period, so the
// lifecycle controller adopts it instead of launching again. Once the NodeClaim names another instance, it is a
// duplicate and collected.
func TestGarbageCollectionSparesALaunchNotYetRecorded(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cloud := fake.New(clk)
	unrecorded := cloud.AddInstance(test.NodeClaim("recording", "default").Obj())
	leaked := cloud.AddInstance(test.NodeClaim("nobody", "default").Obj())
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodeClaim{}).
		WithObjects(test.NodeClaim("recording", "default").Obj()).Build()
	c := NewController(deps.Deps{Client: kube, CloudProvider: cloud, Clock: clk, Recorder: record.NewFakeRecorder(10), Metrics: metrics.NewForTest()})

	clk.Step(10 * LeakGracePeriod)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if diff := cmp.Diff([]string{leaked}, cloud.Deleted()); diff != "" {
		t.Errorf("terminated instances (-want +got):\n%s", diff)
	}

	// The NodeClaim records another instance: the unrecorded one is a duplicate now.
	other := cloud.AddInstance(test.NodeClaim("recording", "default").Obj())
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "recording"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = other
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	clk.Step(LeakGracePeriod)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	if diff := cmp.Diff([]string{leaked, unrecorded}, cloud.Deleted()); diff != "" {
		t.Errorf("terminated instances once the nodeclaim names another (-want +got):\n%s", diff)
	}
}

// TestNextPass: passes come every 30 s up to 1,250 instances, then further apart with the instances, every 2
// minutes from 5,000.
func TestNextPass(t *testing.T) {
	for _, tc := range []struct {
		instances int
		want      time.Duration
	}{{0, 30 * time.Second}, {1250, 30 * time.Second}, {2500, time.Minute}, {4000, 96 * time.Second},
		{5000, 2 * time.Minute}, {20000, 2 * time.Minute}} {
		if got := NextPass(tc.instances); got != tc.want {
			t.Errorf("after listing %d instances: next pass in %v, want %v", tc.instances, got, tc.want)
		}
	}
}
