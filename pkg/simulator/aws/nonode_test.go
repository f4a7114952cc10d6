package awssim

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

// launchInPool launches one instance tagged for the NodePool.
func launchInPool(t *testing.T, e *env, pool string) string {
	t.Helper()
	in := fleetInput("lt-nonode", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", e.subnetIDs(t)["us-west-2a"]))
	in.TagSpecifications[0].Tags[0].Value = aws.String(pool)
	out, err := e.ec2.CreateFleet(context.Background(), in)
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("CreateFleet: %+v %v", out, err)
	}
	return out.Instances[0].InstanceIds[0]
}

// A NoNode fault lets matching instances run without a Node, for its count of instances or until cleared;
// instances it held back stay without a Node, and terminating them works as usual.
func TestNoNodeFault(t *testing.T) {
	tests := []struct {
		name  string
		fault NoNodeFault
		pools []string // launched in this order, each stepped to running before the next
		want  []bool   // whether each gets a Node
	}{
		{"by nodepool", NoNodeFault{NodePool: "broken"}, []string{"broken", "ok", "broken"}, []bool{false, true, false}},
		{"nodepool glob", NoNodeFault{NodePool: "bro*"}, []string{"broken", "ok"}, []bool{false, true}},
		{"by tag", NoNodeFault{Tags: map[string]string{"karpenter.sh/nodepool": "ok"}}, []string{"broken", "ok"}, []bool{true, false}},
		{"any value of a tag", NoNodeFault{Tags: map[string]string{"kubernetes.io/cluster/dovetail": "*"}}, []string{"a", "b"}, []bool{false, false}},
		{"missing tag", NoNodeFault{Tags: map[string]string{"team": "*"}}, []string{"a"}, []bool{true}},
		{"next two instances", NoNodeFault{Count: 2}, []string{"a", "b", "c", "d"}, []bool{false, false, true, true}},
		{"count of matching instances only", NoNodeFault{NodePool: "broken", Count: 1}, []string{"ok", "broken", "broken"}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.launchTemplate(t, "lt-nonode", "x86_64", "")
			if code, body := adminDo(t, e, "POST", "faults/no-node", tt.fault); code != 200 {
				t.Fatalf("POST faults/no-node: %d %s", code, body)
			}
			var got []bool
			for _, pool := range tt.pools {
				id := launchInPool(t, e, pool)
				e.advance(5 * time.Second)
				inst := instanceByID(t, e, id)
				if inst.State != StateRunning {
					t.Fatalf("instance %s is %s, want running", id, inst.State)
				}
				if inst.NodeWithheld == inst.NodeCreated {
					t.Errorf("instance %s: nodeWithheld %v, nodeCreated %v", id, inst.NodeWithheld, inst.NodeCreated)
				}
				got = append(got, e.sink.node(inst.NodeName) != nil)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("which instances got a Node (-want +got):\n%s", d)
			}
		})
	}
}

func TestNoNodeFaultClearAndTerminate(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-nonode", "x86_64", "")
	if err := e.sim.AddNoNodeFault(NoNodeFault{NodePool: "broken"}); err != nil {
		t.Fatal(err)
	}
	held := launchInPool(t, e, "broken")
	e.advance(5 * time.Second)
	// The admin API shows the fault and the instance it holds back.
	code, body := adminDo(t, e, "GET", "state", nil)
	var st State
	if code != 200 || json.Unmarshal(body, &st) != nil || len(st.Faults.NoNode) != 1 || !st.Instances[0].NodeWithheld {
		t.Fatalf("state = %d %s", code, body)
	}
	if code, body := adminDo(t, e, "DELETE", "faults/no-node", nil); code != 200 {
		t.Fatalf("DELETE faults/no-node: %d %s", code, body)
	}
	if f := e.sim.GetFaults(); len(f.NoNode) != 0 {
		t.Fatalf("faults after clearing = %+v", f)
	}
	fixed := launchInPool(t, e, "broken")
	e.advance(5 * time.Second)
	if e.sink.node(instanceByID(t, e, held).NodeName) != nil {
		t.Error("clearing the fault gave a Node to the instance it held back")
	}
	if e.sink.node(instanceByID(t, e, fixed).NodeName) == nil {
		t.Error("no Node for an instance launched after the fault was cleared")
	}
	if _, err := e.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{held}}); err != nil {
		t.Fatal(err)
	}
	e.advance(5 * time.Second)
	if s := instanceByID(t, e, held).State; s != StateTerminated {
		t.Errorf("held-back instance is %s after TerminateInstances, want terminated", s)
	}
}

func TestNoNodeFaultValidation(t *testing.T) {
	e := newEnv(t)
	for _, f := range []NoNodeFault{{Count: -1}, {Tags: map[string]string{"": "x"}}} {
		if code, body := adminDo(t, e, "POST", "faults/no-node", f); code != 400 {
			t.Errorf("fault %+v accepted: %d %s", f, code, body)
		}
		if code, body := adminDo(t, e, "PUT", "faults", Faults{NoNode: []NoNodeFault{f}}); code != 400 {
			t.Errorf("PUT faults with %+v accepted: %d %s", f, code, body)
		}
	}
}

// The launch record keeps every launch, with its tags, after the instance is terminated and forgotten.
func TestLaunchRecordOutlivesInstances(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-nonode", "x86_64", "")
	a := launchInPool(t, e, "one")
	b := launchInPool(t, e, "two")
	// Tags added after the launch (as a batched launch names each instance's NodeClaim) are in the record too.
	if _, err := e.ec2.CreateTags(context.Background(), &ec2.CreateTagsInput{Resources: []string{a},
		Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("claim-a")}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.TerminateInstance(a, ""); err != nil {
		t.Fatal(err)
	}
	e.advance(5 * time.Minute) // past shutting-down and the terminated retention
	e.advance(5 * time.Minute)
	for _, inst := range e.sim.Instances() {
		if inst.ID == a {
			t.Fatalf("instance %s still listed as %s; the test needs it forgotten", a, inst.State)
		}
	}
	code, body := adminDo(t, e, "GET", "launches", nil)
	if code != 200 {
		t.Fatalf("GET launches: %d %s", code, body)
	}
	var got []LaunchRecord
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var ids, pools, claims []string
	for _, l := range got {
		ids, pools = append(ids, l.ID), append(pools, l.Tags["karpenter.sh/nodepool"])
		claims = append(claims, l.Tags["karpenter.sh/nodeclaim"])
	}
	// fleetInput tags every launch for NodeClaim default-abcde; a's tag was changed after its launch.
	if d := cmp.Diff([]string{"claim-a", "default-abcde"}, claims); d != "" {
		t.Errorf("nodeclaim tags (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{a, b}, ids); d != "" {
		t.Errorf("launched ids (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"one", "two"}, pools); d != "" {
		t.Errorf("nodepool tags (-want +got):\n%s", d)
	}
}
