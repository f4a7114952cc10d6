package capacitytype

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestDemote(t *testing.T) {
	for _, tc := range []struct {
		labelled, cloud string
		want            bool
	}{
		{"reserved", "on-demand", true},
		{"reserved", "reserved", false},
		{"on-demand", "reserved", false},
		{"on-demand", "on-demand", false},
		{"spot", "on-demand", false},
		{"reserved", "", false},
	} {
		if got := Demote(map[string]string{karpv1.CapacityTypeLabelKey: tc.labelled}, tc.cloud); got != tc.want {
			t.Errorf("Demote(labelled %s, cloud %q) = %v, want %v", tc.labelled, tc.cloud, got, tc.want)
		}
	}
}

// TestReservationEndedBecomesOnDemand: a reserved NodeClaim whose instance the cloud now reports on-demand (its
// reservation expired or was cancelled) and its registered Node lose the reservation labels and become
// on-demand; a NodeClaim still in its reservation, one being deleted, a spot one and a Node not registered yet
// are left alone.
func TestReservationEndedBecomesOnDemand(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme, corev1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))
	cloud := fake.New(clk)
	reservedLabels := func(b *test.NodeClaimBuilder) *test.NodeClaimBuilder {
		return b.Label(karpv1.CapacityTypeLabelKey, "reserved").Label(awsv1.LabelCapacityReservationID, "cr-1").
			Label(awsv1.LabelCapacityReservationType, "default").Label("team", "a")
	}
	instance := func(name, capacityType string) string {
		return cloud.AddInstance(test.NodeClaim(name, "default").Label(karpv1.CapacityTypeLabelKey, capacityType).Obj())
	}
	ended, still, deleting, spot, unregistered := instance("ended", "on-demand"), instance("still", "reserved"),
		instance("deleting", "on-demand"), instance("spot", "spot"), instance("unregistered", "on-demand")
	claim := func(name, id string) *karpv1.NodeClaim {
		return reservedLabels(test.NodeClaim(name, "default")).ProviderID(id).Obj()
	}
	gone := claim("deleting", deleting)
	gone.Finalizers = []string{karpv1.TerminationFinalizer}
	spotClaim := test.NodeClaim("spot", "default").Label(karpv1.CapacityTypeLabelKey, "spot").ProviderID(spot).Obj()
	node := func(name, id string, registered bool) *corev1.Node {
		b := test.Node(name, id).Label(karpv1.CapacityTypeLabelKey, "reserved").Label(awsv1.LabelCapacityReservationID, "cr-1").
			Label(awsv1.LabelCapacityReservationType, "default").Label("team", "a")
		if registered {
			b = b.Label(karpv1.NodeRegisteredLabelKey, "true")
		}
		return b.Obj()
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		claim("ended", ended), claim("still", still), gone, spotClaim, claim("unregistered", unregistered),
		node("n-ended", ended, true), node("n-still", still, true), node("n-unregistered", unregistered, false),
	).Build()
	if err := kube.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	c := NewController(deps.Deps{Client: kube, CloudProvider: cloud, Clock: clk, Recorder: record.NewFakeRecorder(10), Metrics: metrics.NewForTest()})
	if err := c.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	onDemand := map[string]string{karpv1.CapacityTypeLabelKey: "on-demand", "team": "a"}
	reserved := map[string]string{karpv1.CapacityTypeLabelKey: "reserved", awsv1.LabelCapacityReservationID: "cr-1",
		awsv1.LabelCapacityReservationType: "default", "team": "a"}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m {
			out[a] = b
		}
		return out
	}
	check := func(obj client.Object, name string, want map[string]string) {
		t.Helper()
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := obj.GetLabels()
		delete(got, karpv1.NodePoolLabelKey)
		delete(got, corev1.LabelHostname)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", name, diff)
		}
	}
	check(&karpv1.NodeClaim{}, "ended", onDemand)
	check(&karpv1.NodeClaim{}, "still", reserved)
	check(&karpv1.NodeClaim{}, "deleting", reserved)
	check(&karpv1.NodeClaim{}, "unregistered", onDemand)
	check(&karpv1.NodeClaim{}, "spot", map[string]string{karpv1.CapacityTypeLabelKey: "spot"})
	check(&corev1.Node{}, "n-ended", with(onDemand, karpv1.NodeRegisteredLabelKey, "true"))
	check(&corev1.Node{}, "n-still", with(reserved, karpv1.NodeRegisteredLabelKey, "true"))
	check(&corev1.Node{}, "n-unregistered", reserved)
}

// TestNoListingWithoutReservations: with nothing labelled reserved the cloud is not asked; a reserved NodeClaim or
// Node makes the pass list the instances.
func TestNoListingWithoutReservations(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme, corev1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name     string
		objs     []client.Object
		wantList bool
	}{
		{"on-demand and spot only", []client.Object{
			test.NodeClaim("a", "default").Label(karpv1.CapacityTypeLabelKey, "on-demand").ProviderID("aws:///z/i-1").Obj(),
			test.NodeClaim("b", "default").Label(karpv1.CapacityTypeLabelKey, "spot").ProviderID("aws:///z/i-2").Obj(),
			test.Node("n-a", "aws:///z/i-1").Label(karpv1.CapacityTypeLabelKey, "on-demand").Obj(),
		}, false},
		{"a reserved NodeClaim", []client.Object{
			test.NodeClaim("a", "default").Label(karpv1.CapacityTypeLabelKey, "reserved").ProviderID("aws:///z/i-1").Obj(),
		}, true},
		{"a reserved Node", []client.Object{
			test.NodeClaim("a", "default").Label(karpv1.CapacityTypeLabelKey, "on-demand").ProviderID("aws:///z/i-1").Obj(),
			test.Node("n-a", "aws:///z/i-1").Label(karpv1.CapacityTypeLabelKey, "reserved").Obj(),
		}, true},
	} {
		cloud := fake.New(clk)
		listFailed := errors.New("listing refused")
		cloud.InjectError("List", listFailed)
		kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
		c := NewController(deps.Deps{Client: kube, CloudProvider: cloud, Clock: clk, Recorder: record.NewFakeRecorder(10), Metrics: metrics.NewForTest()})
		err := c.Reconcile(ctx)
		if listed := errors.Is(err, listFailed); listed != tc.wantList {
			t.Errorf("%s: Reconcile returned %v; listed the cloud %v, want %v", tc.name, err, listed, tc.wantList)
		}
	}
}
