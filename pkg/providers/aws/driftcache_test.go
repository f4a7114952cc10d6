package aws

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
)

// TestDriftInstancesRemembered: IsDrifted describes an instance once per DriftInstanceTTL, not on every call; a
// failed description is not remembered, and expired ones are forgotten.
func TestDriftInstancesRemembered(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	d := newDriftInstances(clk)
	calls := map[string]int{}
	fail := false
	describe := func(_ context.Context, id string) (*instance.Instance, error) {
		calls[id]++
		if fail {
			return nil, errors.New("throttled")
		}
		return &instance.Instance{ID: id, ImageID: "ami-1"}, nil
	}
	get := func(id string) error {
		t.Helper()
		inst, err := d.get(context.Background(), id, describe, nil)
		if err == nil && inst.ID != id {
			t.Fatalf("got instance %s for %s", inst.ID, id)
		}
		return err
	}
	for range 3 {
		if err := get("i-a"); err != nil {
			t.Fatal(err)
		}
	}
	if calls["i-a"] != 1 {
		t.Errorf("3 calls within the TTL described the instance %d times, want 1", calls["i-a"])
	}
	clk.Step(DriftInstanceTTL)
	fail = true
	if err := get("i-a"); err == nil {
		t.Fatal("an expired description was used instead of describing again")
	}
	fail = false
	if err := get("i-a"); err != nil {
		t.Fatal(err)
	}
	if calls["i-a"] != 3 {
		t.Errorf("after the TTL and a failed description: %d descriptions, want 3 (the failure not remembered)", calls["i-a"])
	}
	if err := get("i-b"); err != nil {
		t.Fatal(err)
	}
	clk.Step(DriftInstanceTTL)
	if err := get("i-c"); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.byID["i-a"]; ok {
		t.Errorf("expired descriptions kept: %v", d.byID)
	}
}

// TestDriftInstancesKeepWhatDriftCompares: a remembered description holds the image, subnet, security groups and
// capacity reservation (what Drift compares) and nothing else of the instance.
func TestDriftInstancesKeepWhatDriftCompares(t *testing.T) {
	d := newDriftInstances(clocktesting.NewFakeClock(time.Now()))
	full := &instance.Instance{ID: "i-a", Type: "m5.large", Zone: "us-west-2a", SubnetID: "subnet-1", ImageID: "ami-1",
		CapacityType: "spot", State: "running", LaunchTime: time.Now(), PrivateDNSName: "ip-10-0-0-1.ec2.internal",
		SecurityGroupIDs: []string{"sg-1", "sg-2"}, Tags: map[string]string{"Name": "x", "karpenter.sh/nodepool": "default"},
		CapacityReservationID: "cr-1"}
	describe := func(context.Context, string) (*instance.Instance, error) { return full, nil }
	want := instance.Instance{ID: "i-a", SubnetID: "subnet-1", ImageID: "ami-1", SecurityGroupIDs: []string{"sg-1", "sg-2"},
		CapacityReservationID: "cr-1"}
	for i := range 2 {
		got, err := d.get(context.Background(), "i-a", describe, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("call %d (-want +got):\n%s", i+1, diff)
		}
	}
}

// TestDriftInstancesListed: the drift checks of a whole cluster cost one listing per DriftInstanceTTL, not a
// description per instance; an instance the listing did not return (launched since, or not this cluster's) is
// described on its own; a failed listing is not retried before the TTL, its instances described meanwhile.
func TestDriftInstancesListed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	d := newDriftInstances(clk)
	cluster := map[string]string{"i-1": "ami-1", "i-2": "ami-1", "i-3": "ami-2"}
	var lists, describes int
	listFails := false
	list := func(context.Context) ([]*instance.Instance, error) {
		lists++
		if listFails {
			return nil, errors.New("throttled")
		}
		var out []*instance.Instance
		for id, ami := range cluster {
			out = append(out, &instance.Instance{ID: id, ImageID: ami, Type: "m5.large"})
		}
		return out, nil
	}
	describe := func(_ context.Context, id string) (*instance.Instance, error) {
		describes++
		return &instance.Instance{ID: id, ImageID: "ami-9"}, nil
	}
	images := func(ids ...string) []string {
		t.Helper()
		var out []string
		for _, id := range ids {
			inst, err := d.get(context.Background(), id, describe, list)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, inst.ImageID)
		}
		return out
	}
	type calls struct{ Lists, Describes int }
	steps := []struct {
		name   string
		step   time.Duration
		fail   bool
		ids    []string
		images []string
		calls  calls
	}{
		{"first checks: one listing", 0, false, []string{"i-1", "i-2", "i-3", "i-1"}, []string{"ami-1", "ami-1", "ami-2", "ami-1"}, calls{1, 0}},
		{"an instance the listing missed is described", time.Minute, false, []string{"i-4", "i-4"}, []string{"ami-9", "ami-9"}, calls{1, 1}},
		{"after the TTL: listed again", DriftInstanceTTL, false, []string{"i-1", "i-2", "i-3"}, []string{"ami-1", "ami-1", "ami-2"}, calls{2, 1}},
		{"failed listing: described one by one", DriftInstanceTTL, true, []string{"i-1", "i-2"}, []string{"ami-9", "ami-9"}, calls{3, 3}},
		{"not listed again before the TTL", time.Minute, false, []string{"i-3"}, []string{"ami-9"}, calls{3, 4}},
	}
	for _, s := range steps {
		clk.Step(s.step)
		listFails = s.fail
		if s.name == "an instance the listing missed is described" {
			cluster["i-4"] = "ami-3" // launched after the listing
		}
		got := images(s.ids...)
		if diff := cmp.Diff(s.images, got); diff != "" {
			t.Errorf("%s: images (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.calls, calls{lists, describes}); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", s.name, diff)
		}
	}
	if inst, _ := d.fresh("i-1"); inst != nil && inst.Type != "" {
		t.Errorf("a listed instance kept more than Drift compares: %+v", inst)
	}
}

// TestDriftInstancesFedByListings: a listing made by someone else (CloudProvider.List, for garbage collection)
// renews the descriptions, so checks within DriftInstanceTTL of it neither list nor describe; after the TTL
// without another listing, they list again.
func TestDriftInstancesFedByListings(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	d := newDriftInstances(clk)
	var lists, describes int
	list := func(context.Context) ([]*instance.Instance, error) {
		lists++
		return []*instance.Instance{{ID: "i-1", ImageID: "ami-2"}}, nil
	}
	describe := func(_ context.Context, id string) (*instance.Instance, error) {
		describes++
		return &instance.Instance{ID: id, ImageID: "ami-9"}, nil
	}
	check := func(why, wantImage string, wantLists, wantDescribes int) {
		t.Helper()
		inst, err := d.get(context.Background(), "i-1", describe, list)
		if err != nil {
			t.Fatal(err)
		}
		if inst.ImageID != wantImage || lists != wantLists || describes != wantDescribes {
			t.Errorf("%s: image %s after %d listings and %d descriptions, want %s, %d, %d", why, inst.ImageID, lists,
				describes, wantImage, wantLists, wantDescribes)
		}
	}
	d.listedAt(clk.Now(), []*instance.Instance{{ID: "i-1", ImageID: "ami-1"}})
	check("after another's listing", "ami-1", 0, 0)
	clk.Step(DriftInstanceTTL - time.Second)
	d.listedAt(clk.Now(), []*instance.Instance{{ID: "i-1", ImageID: "ami-1"}})
	clk.Step(DriftInstanceTTL - time.Second)
	check("within the TTL of the second listing", "ami-1", 0, 0)
	clk.Step(time.Second)
	check("after the TTL, no other listing", "ami-2", 1, 0)
}
