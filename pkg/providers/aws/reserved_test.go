package aws_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
	"github.com/dovetail/dovetail/pkg/settings"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

func reservedGate(on bool) func(*aws.Options) {
	return func(o *aws.Options) {
		o.Settings.FeatureGates = map[string]bool{settings.FeatureReservedCapacity: on}
	}
}

func reservedClaim(name string) *karpv1.NodeClaim {
	return test.NodeClaim(name, "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "reserved", "on-demand").Obj()
}

// TestReservedCapacityAgainstSimulator: a reservation of 2 m5.large selected by tag resolves into the node
// class status and into reserved offerings priced near zero; three concurrent launches take the two reserved
// instances and fall back to on-demand for the third; a terminated reserved instance gives its room back.
func TestReservedCapacityAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.providerWith(t, "uid-a", reservedGate(true))
	ctx := context.Background()
	nc, crID := w.mlReservation(t, p)
	var err error
	if _, err := w.sim.AddCapacityReservation(awssim.CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2b", Count: 5}); err != nil {
		t.Fatal(err)
	}
	if nc.Status.CapacityReservations, err = p.ResolveCapacityReservations(ctx, nc); err != nil {
		t.Fatal(err)
	}
	owner := nc.Status.CapacityReservations[0].OwnerID
	want := []awsv1.CapacityReservation{{ID: crID, AvailabilityZone: "us-west-2a", InstanceType: "m5.large", InstanceMatchCriteria: "targeted",
		OwnerID: owner, ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive}}
	if d := cmp.Diff(want, nc.Status.CapacityReservations); d != "" || len(owner) != 12 {
		t.Fatalf("status.capacityReservations (-want +got):\n%s (owner %q)", d, owner)
	}
	p.resolve(t, nc)

	its, err := p.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatal(err)
	}
	var reserved []cloudprovider.Offering
	odPrice := 0.0
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeReserved {
				reserved = append(reserved, o)
			}
			if it.Name == "m5.large" && o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				odPrice = o.Price
			}
		}
	}
	wantOff := []cloudprovider.Offering{{Zone: "us-west-2a", CapacityType: "reserved", Price: capacityreservation.Price(odPrice), Available: true,
		ReservationID: crID, ReservationType: "default", ReservationCapacity: 2}}
	if d := cmp.Diff(wantOff, reserved); d != "" || odPrice == 0 {
		t.Fatalf("reserved offerings (-want +got):\n%s", d)
	}

	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for _, name := range []string{"default-r1", "default-r2", "default-r3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created, err := p.Create(ctx, reservedClaim(name))
			if err != nil {
				t.Errorf("Create %s: %v", name, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, created.Labels[karpv1.CapacityTypeLabelKey]+" "+created.Labels[corev1.LabelTopologyZone]+" "+
				created.Labels[awsv1.LabelCapacityReservationID]+" "+created.Labels[awsv1.LabelCapacityReservationType]+" "+
				created.Labels[awsv1.LabelCapacityReservationInterruptible])
		}()
	}
	wg.Wait()
	sort.Strings(got)
	r := "reserved us-west-2a " + crID + " default false"
	if d := cmp.Diff([]string{"on-demand us-west-2a   ", r, r}, got); d != "" && !cmp.Equal([]string{"on-demand us-west-2b   ", r, r}, got) {
		t.Errorf("launches (-want +got):\n%s", d)
	}
	if n := reservationAvailable(t, p, crID); n != 0 {
		t.Errorf("reservation available after two launches = %d, want 0", n)
	}

	// Terminating a reserved instance gives its room back once EC2 has terminated it.
	list, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.Labels[awsv1.LabelCapacityReservationID] == crID {
			if err := p.Delete(ctx, c); err != nil && !cloudprovider.IsNotFound(err) {
				t.Fatal(err)
			}
			break
		}
	}
	for i := 0; i < 10 && reservationAvailable(t, p, crID) == 0; i++ {
		w.clock.Step(30 * time.Second)
		w.sim.Step(ctx)
	}
	if n := reservationAvailable(t, p, crID); n != 1 {
		t.Errorf("reservation available after a termination = %d, want 1", n)
	}
	cur := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: "default"}, cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.CapacityReservations, err = p.ResolveCapacityReservations(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := p.kube.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	created, err := p.Create(ctx, reservedClaim("default-r4"))
	if err != nil || created.Labels[karpv1.CapacityTypeLabelKey] != "reserved" {
		t.Errorf("launch after room came back = %v, %v; want reserved", err, created.Labels)
	}

	// With the gate off, the same node class offers no reserved capacity.
	off := w.providerWith(t, "uid-b", reservedGate(false), cur.DeepCopy())
	its, err = off.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeReserved {
				t.Fatalf("gate off: %s has a reserved offering %+v", it.Name, o)
			}
		}
	}
	if rs, err := off.ResolveCapacityReservations(ctx, cur); err != nil || len(rs) != 0 {
		t.Errorf("gate off: resolved %v, %v; want none", rs, err)
	}
}

func reservationAvailable(t *testing.T, p *provider, id string) int32 {
	t.Helper()
	out, err := p.ec2.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil || len(out.CapacityReservations) != 1 {
		t.Fatalf("describe %s: %v", id, err)
	}
	return *out.CapacityReservations[0].AvailableInstanceCount
}

// mlReservation returns a node class selecting the capacity reservations tagged team=ml, and the ID of such a
// reservation of 2 m5.large in us-west-2a, made in the account p's first call creates.
func (w *world) mlReservation(t *testing.T, p *provider) (*awsv1.EC2NodeClass, string) {
	t.Helper()
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}
	if _, err := p.ResolveSubnets(context.Background(), nc); err != nil { // creates the account the reservation goes into
		t.Fatal(err)
	}
	crID, err := w.sim.AddCapacityReservation(awssim.CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 2,
		Tags: map[string]string{"team": "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	return nc, crID
}
