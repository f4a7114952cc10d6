package awssim

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestNodesGoToTheClusterTheUserDataNames: with a second cluster configured, each instance's Node is created,
// untainted and deleted in the cluster whose API server its user data names; an unknown endpoint gets no Node.
func TestNodesGoToTheClusterTheUserDataNames(t *testing.T) {
	other := newFakeSink()
	e := newEnv(t, func(o *Options) {
		o.ClusterNodes = map[string]NodeSink{"HTTPS://10.0.0.2:443/": other}
	})
	shell := func(endpoint string) string {
		return "#!/bin/bash\n/etc/eks/bootstrap.sh 'dovetail' --apiserver-endpoint '" + endpoint + "' --b64-cluster-ca 'Q0E='\n"
	}
	e.launchTemplate(t, "lt-a", "x86_64", al2023UserData) // names https://127.0.0.1:6443, the default cluster
	e.launchTemplate(t, "lt-b", "x86_64", shell("https://10.0.0.2:443"))
	e.launchTemplate(t, "lt-none", "x86_64", shell("https://10.9.9.9"))
	idA := launchOne(t, e, "lt-a", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	idB := launchOne(t, e, "lt-b", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	idNone := launchOne(t, e, "lt-none", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	e.advance(2 * time.Second)
	e.advance(time.Second) // the uninitialized taint comes off

	nameA, nameB := instanceByID(t, e, idA).NodeName, instanceByID(t, e, idB).NodeName
	if e.sink.node(nameA) == nil || other.node(nameA) != nil {
		t.Errorf("node of %s: in default cluster %v, in other %v; want the default cluster only", idA, e.sink.node(nameA) != nil, other.node(nameA) != nil)
	}
	if other.node(nameB) == nil || e.sink.node(nameB) != nil {
		t.Errorf("node of %s: in default cluster %v, in other %v; want the other cluster only", idB, e.sink.node(nameB) != nil, other.node(nameB) != nil)
	}
	if n := other.node(nameB); n != nil && len(n.Spec.Taints) != 0 {
		t.Errorf("node %s in the other cluster kept taints %v", nameB, n.Spec.Taints)
	}
	if e.sink.count() != 1 || other.count() != 1 {
		t.Errorf("nodes: default %d, other %d; want 1 and 1 (none for %s, whose endpoint no cluster serves)", e.sink.count(), other.count(), idNone)
	}
	if inst := instanceByID(t, e, idNone); inst.State != StateRunning || inst.NodeCreated {
		t.Errorf("instance with an unknown endpoint: %+v, want running without a Node", inst)
	}

	if _, err := e.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{idB}}); err != nil {
		t.Fatal(err)
	}
	e.advance(2 * time.Second)
	e.advance(100 * time.Millisecond)
	if other.node(nameB) != nil {
		t.Errorf("node %s still in the other cluster after its instance terminated", nameB)
	}
	if e.sink.node(nameA) == nil {
		t.Errorf("node %s of the default cluster is gone", nameA)
	}
}

func TestClusterNodesNeedsNodes(t *testing.T) {
	if _, err := New(Options{ClusterNodes: map[string]NodeSink{"https://10.0.0.2": newFakeSink()}}); err == nil {
		t.Error("New accepted ClusterNodes without Nodes")
	}
	if _, err := New(Options{Nodes: newFakeSink(), ClusterNodes: map[string]NodeSink{"not a url": newFakeSink()}}); err == nil {
		t.Error("New accepted a ClusterNodes key that is not a URL")
	}
	if _, err := New(Options{Nodes: newFakeSink(), ClusterEndpoint: "https://10.0.0.2", ClusterNodes: map[string]NodeSink{"https://10.0.0.2/": newFakeSink()}}); err == nil {
		t.Error("New accepted the default cluster's endpoint as a further cluster")
	}
}
