package cloudprovider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestUnavailableOfferingsRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	in := []UnavailableOffering{
		{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot", Reason: "InsufficientInstanceCapacity", Until: now.Add(time.Minute)},
		{InstanceType: "m5.large", Zone: "us-west-2b", CapacityType: "spot", Until: now.Add(-time.Second)},
	}
	data, err := EncodeUnavailableOfferings(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeUnavailableOfferings(data, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in[:1], got); diff != "" {
		t.Errorf("decoded (expired entry dropped) (-want +got):\n%s", diff)
	}
	if empty, err := EncodeUnavailableOfferings(nil); err != nil || empty != "[]" {
		t.Errorf("EncodeUnavailableOfferings(nil) = %q, %v; want [] (a list, so readers can tell it from a missing key)", empty, err)
	}
	for _, bad := range []string{"", "{", `[{"zone":"us-west-2a","capacityType":"spot"}]`} {
		if _, err := DecodeUnavailableOfferings(bad, now); err == nil {
			t.Errorf("DecodeUnavailableOfferings(%q): want an error", bad)
		}
	}
}

func TestMarkUnavailable(t *testing.T) {
	its := []*InstanceType{
		{Name: "m5.large", Offerings: []Offering{{Zone: "us-west-2a", CapacityType: "spot", Available: true}, {Zone: "us-west-2a", CapacityType: "on-demand", Available: true}}},
		{Name: "c5.large", Offerings: []Offering{{Zone: "us-west-2a", CapacityType: "spot", Available: true}}},
	}
	n := MarkUnavailable(its, []UnavailableOffering{{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}})
	if n != 1 {
		t.Errorf("changed %d offerings, want 1", n)
	}
	got := []bool{its[0].Offerings[0].Available, its[0].Offerings[1].Available, its[1].Offerings[0].Available}
	if diff := cmp.Diff([]bool{false, true, true}, got); diff != "" {
		t.Errorf("availability (-want +got):\n%s", diff)
	}
}
