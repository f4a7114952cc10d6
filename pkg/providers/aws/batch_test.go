package aws_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// createAll creates the claims at once through a provider whose launch window closes when it holds all of
// them (and never on time), so they share a fleet whenever their launches are identical.
func createAll(t *testing.T, w *world, claims []*karpv1.NodeClaim) ([]*karpv1.NodeClaim, []error, *provider) {
	t.Helper()
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.LaunchBatch = &instance.BatchWindow{Idle: time.Hour, Max: time.Hour, Size: len(claims)}
	})
	p.resolvedNodeClass(t)
	created := make([]*karpv1.NodeClaim, len(claims))
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i], errs[i] = p.Create(context.Background(), c)
		}()
	}
	wg.Wait()
	return created, errs, p
}

func onDemandClaim(name, instanceType string) *karpv1.NodeClaim {
	c := claim(name, instanceType)
	for i, r := range c.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey {
			c.Spec.Requirements[i].Values = []string{"on-demand"}
		}
	}
	return c
}

func TestIdenticalLaunchesShareOneFleetAndKeepTheirOwnTags(t *testing.T) {
	w := newWorld(t)
	var claims []*karpv1.NodeClaim
	for i := range 5 {
		claims = append(claims, onDemandClaim(fmt.Sprintf("default-%d", i), "m5.large"))
	}
	created, errs, p := createAll(t, w, claims)
	seen := map[string]string{}
	for i, c := range created {
		if errs[i] != nil {
			t.Fatalf("Create(%s): %v", claims[i].Name, errs[i])
		}
		id, err := instance.ParseProviderID(c.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("instance %s given to %s and %s", id, other, c.Name)
		}
		seen[id] = c.Name
		tags := map[string]string{}
		for _, tg := range describe(t, p, id).Tags {
			tags[awssdk.ToString(tg.Key)] = awssdk.ToString(tg.Value)
		}
		if tags["karpenter.sh/nodeclaim"] != c.Name || tags["Name"] != c.Name || tags["karpenter.sh/nodepool"] != "default" {
			t.Errorf("instance %s of %s has tags %v", id, c.Name, tags)
		}
	}
	if got := w.sim.Calls()["CreateFleet"]; got != 1 {
		t.Errorf("%d CreateFleet calls for 5 identical launches, want 1", got)
	}
	// A lost status write is recovered from the per-instance tag, as for a launch of its own.
	again, err := p.Create(context.Background(), claims[3])
	if err != nil || again.Status.ProviderID != created[3].Status.ProviderID {
		t.Errorf("Create(%s) again = %v, %v; want the instance it already has", claims[3].Name, again, err)
	}
}

func TestPartlyFulfilledFleetFailsOnlyTheNodeClaimsItHadNoInstanceFor(t *testing.T) {
	w := newWorld(t)
	// m5.large on-demand has room for two more instances, in any zone.
	w.sim.AddCapacityFault(awssim.CapacityFault{InstanceType: "m5.large", CapacityType: "on-demand", Available: 2})
	var claims []*karpv1.NodeClaim
	for i := range 5 {
		claims = append(claims, onDemandClaim(fmt.Sprintf("default-%d", i), "m5.large"))
	}
	created, errs, p := createAll(t, w, claims)
	var launched, ice int
	for i := range claims {
		switch {
		case errs[i] == nil && created[i].Labels[corev1.LabelInstanceTypeStable] == "m5.large":
			launched++
		case cloudprovider.IsInsufficientCapacity(errs[i]):
			ice++
		default:
			t.Errorf("Create(%s) = %v, %v", claims[i].Name, created[i], errs[i])
		}
	}
	if d := cmp.Diff([2]int{2, 3}, [2]int{launched, ice}); d != "" {
		t.Errorf("[launched, insufficient capacity] (-want +got):\n%s", d)
	}
	if got := w.sim.Calls()["CreateFleet"]; got != 1 {
		t.Errorf("%d CreateFleet calls, want 1", got)
	}
	if !offeringUnavailable(t, p, "m5.large", "on-demand") {
		t.Errorf("m5.large on-demand still offered after the fleet ran out of it")
	}
}

// createNoticed creates the claims at once through a provider told (LaunchNotices) that they are on their way:
// each launch window waits, however long, until all have arrived, then closes when idle.
func createNoticed(t *testing.T, w *world, claims []*karpv1.NodeClaim, first bool) ([]*karpv1.NodeClaim, []error, *provider) {
	t.Helper()
	notices := cloudprovider.NewLaunchNotices(w.clock, time.Hour)
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.LaunchBatch = &instance.BatchWindow{Idle: time.Millisecond, Max: time.Hour, Size: 1000}
		o.LaunchNotices = notices
	})
	p.resolvedNodeClass(t)
	ctx := context.Background()
	if first {
		ctx = cloudprovider.WithFirstLaunch(ctx)
	}
	for _, c := range claims {
		notices.Expect(c.Name)
	}
	created := make([]*karpv1.NodeClaim, len(claims))
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i], errs[i] = p.Create(ctx, c)
		}()
	}
	wg.Wait()
	if n := notices.Waiting(); n != 0 {
		t.Errorf("%d launches still noted as on their way after every Create returned", n)
	}
	return created, errs, p
}

// A NodeClaim whose launch fails (no capacity for its only instance type) fails alone: the identical launches
// arriving with it share one fleet and each get an instance.
func TestOneFailedLaunchDoesNotFailTheOthers(t *testing.T) {
	w := newWorld(t)
	w.sim.AddCapacityFault(awssim.CapacityFault{InstanceType: "m5.xlarge", CapacityType: "on-demand", Available: 0})
	var claims []*karpv1.NodeClaim
	for i := range 4 {
		claims = append(claims, onDemandClaim(fmt.Sprintf("default-%d", i), "m5.large"))
	}
	claims = append(claims, onDemandClaim("no-capacity", "m5.xlarge"))
	created, errs, _ := createNoticed(t, w, claims, true)
	seen := map[string]bool{}
	for i, c := range claims[:4] {
		if errs[i] != nil {
			t.Fatalf("Create(%s): %v", c.Name, errs[i])
		}
		if seen[created[i].Status.ProviderID] {
			t.Errorf("instance %s handed out twice", created[i].Status.ProviderID)
		}
		seen[created[i].Status.ProviderID] = true
	}
	if !cloudprovider.IsInsufficientCapacity(errs[4]) {
		t.Errorf("Create(no-capacity) = %v, want an insufficient capacity error", errs[4])
	}
	if got := w.sim.Calls()["CreateFleet"]; got != 2 {
		t.Errorf("%d CreateFleet calls, want 2 (one for the four m5.large, one for the m5.xlarge)", got)
	}
}

// A first launch (cloudprovider.WithFirstLaunch) does not look for an instance already launched for the
// NodeClaim; any other launch does, and adopts the instance it finds.
func TestFirstLaunchSkipsTheLookUp(t *testing.T) {
	w := newWorld(t)
	var claims []*karpv1.NodeClaim
	for i := range 3 {
		claims = append(claims, onDemandClaim(fmt.Sprintf("default-%d", i), "m5.large"))
	}
	before := w.sim.Calls()["DescribeInstances"]
	created, errs, p := createNoticed(t, w, claims, true)
	for i := range claims {
		if errs[i] != nil {
			t.Fatalf("Create(%s): %v", claims[i].Name, errs[i])
		}
	}
	if got := w.sim.Calls()["DescribeInstances"] - before; got != 0 {
		t.Errorf("%d DescribeInstances calls for three first launches, want 0", got)
	}
	if got := w.sim.Calls()["CreateFleet"]; got != 1 {
		t.Errorf("%d CreateFleet calls for three identical first launches, want 1", got)
	}
	again, err := p.Create(context.Background(), claims[1])
	if err != nil || again.Status.ProviderID != created[1].Status.ProviderID {
		t.Errorf("Create(%s) again = %v, %v; want the instance it already has", claims[1].Name, again, err)
	}
	if got := w.sim.Calls()["CreateFleet"]; got != 1 {
		t.Errorf("%d CreateFleet calls after a repeated launch, want 1 (the instance is adopted)", got)
	}
}
