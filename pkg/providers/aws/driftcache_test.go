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
		inst, err := d.get(context.Background(), id, describe)
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

// TestDriftInstancesKeepWhatDriftCompares: a remembered description holds the image, subnet and security groups
// (what Drift compares) and nothing else of the instance.
func TestDriftInstancesKeepWhatDriftCompares(t *testing.T) {
	d := newDriftInstances(clocktesting.NewFakeClock(time.Now()))
	full := &instance.Instance{ID: "i-a", Type: "m5.large", Zone: "us-west-2a", SubnetID: "subnet-1", ImageID: "ami-1",
		CapacityType: "spot", State: "running", LaunchTime: time.Now(), PrivateDNSName: "ip-10-0-0-1.ec2.internal",
		SecurityGroupIDs: []string{"sg-1", "sg-2"}, Tags: map[string]string{"Name": "x", "karpenter.sh/nodepool": "default"}}
	describe := func(context.Context, string) (*instance.Instance, error) { return full, nil }
	want := instance.Instance{ID: "i-a", SubnetID: "subnet-1", ImageID: "ami-1", SecurityGroupIDs: []string{"sg-1", "sg-2"}}
	for i := range 2 {
		got, err := d.get(context.Background(), "i-a", describe)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("call %d (-want +got):\n%s", i+1, diff)
		}
	}
}
