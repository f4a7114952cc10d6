package unavailable

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCacheExpiresAfterTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := New(clk, 0)
	o := Offering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}
	other := Offering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand"}
	seq := c.Sequence()
	c.MarkUnavailable(context.Background(), "InsufficientInstanceCapacity", o)
	if c.Sequence() == seq {
		t.Errorf("sequence did not change on mark")
	}
	if !c.IsUnavailable(o) {
		t.Fatalf("offering not unavailable right after marking")
	}
	if c.IsUnavailable(other) {
		t.Errorf("on-demand offering unavailable, only spot was marked")
	}
	clk.Step(DefaultTTL - time.Second)
	if !c.IsUnavailable(o) {
		t.Errorf("offering available before the TTL passed")
	}
	clk.Step(time.Second)
	if c.IsUnavailable(o) {
		t.Errorf("offering still unavailable after the TTL")
	}

	c.MarkSubnetUnavailable(context.Background(), "subnet-1")
	if !c.IsSubnetUnavailable("subnet-1") || c.IsSubnetUnavailable("subnet-2") {
		t.Errorf("subnet marks wrong")
	}
	clk.Step(DefaultTTL)
	if c.IsSubnetUnavailable("subnet-1") {
		t.Errorf("subnet still unavailable after the TTL")
	}
}

func TestEntries(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	c := New(clk, time.Minute)
	ctx := context.Background()
	b := Offering{InstanceType: "m5.large", Zone: "us-west-2b", CapacityType: "spot"}
	a := Offering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}
	c.MarkUnavailable(ctx, "InsufficientInstanceCapacity", b)
	clk.Step(30 * time.Second)
	c.MarkUnavailable(ctx, "InsufficientInstanceCapacity", a)
	want := []Entry{
		{Offering: a, Reason: "InsufficientInstanceCapacity", Until: clk.Now().Add(time.Minute)},
		{Offering: b, Reason: "InsufficientInstanceCapacity", Until: clk.Now().Add(30 * time.Second)},
	}
	if diff := cmp.Diff(want, c.Entries()); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	clk.Step(30 * time.Second)
	if diff := cmp.Diff(want[:1], c.Entries()); diff != "" {
		t.Errorf("entries once b expired (-want +got):\n%s", diff)
	}
}
