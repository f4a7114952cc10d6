package awssim

import (
	"context"
	"errors"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func instanceByID(t *testing.T, e *env, id string) InstanceInfo {
	t.Helper()
	for _, i := range e.sim.Instances() {
		if i.ID == id {
			return i
		}
	}
	t.Fatalf("instance %s not found", id)
	return InstanceInfo{}
}

func TestNodeLifecycle(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-al2023", "x86_64", al2023UserData)
	id := launchOne(t, e, "lt-al2023", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeSpot)
	name := instanceByID(t, e, id).NodeName

	e.advance(time.Second)
	if e.sink.count() != 0 {
		t.Fatal("node created while pending")
	}
	e.advance(time.Second)
	n := e.sink.node(name)
	if n == nil {
		t.Fatalf("no node %s after the pending duration", name)
	}
	inst := instanceByID(t, e, id)
	if n.Spec.ProviderID != "aws:///us-west-2a/"+id || n.Annotations[KwokNodeAnnotation] != "fake" {
		t.Errorf("node identity = %s %v", n.Spec.ProviderID, n.Annotations)
	}
	wantLabels := map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot",
		"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
		"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "us-west-2a",
		"topology.kubernetes.io/region": "us-west-2", "topology.k8s.aws/zone-id": "usw2-az1",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	wantTaints := []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: "NoExecute"}, {Key: "dedicated", Value: "gpu", Effect: "NoSchedule"},
		{Key: UninitializedTaintKey, Value: "true", Effect: "NoSchedule"}}
	if d := cmp.Diff(wantTaints, n.Spec.Taints); d != "" {
		t.Errorf("taints (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: inst.PrivateIP}, {Type: corev1.NodeHostName, Address: name},
		{Type: corev1.NodeInternalDNS, Address: name}}, n.Status.Addresses); d != "" {
		t.Errorf("addresses (-want +got):\n%s", d)
	}
	// m5.large: 2 vCPU, 8192 MiB; maxPods 58 from the NodeConfig; kubeReserved from the NodeConfig (80m, 893Mi).
	qty := func(rl corev1.ResourceList, name corev1.ResourceName) string { q := rl[name]; return q.String() }
	checks := []struct {
		list corev1.ResourceList
		name corev1.ResourceName
		want string
	}{
		{n.Status.Capacity, corev1.ResourceCPU, "2"},
		{n.Status.Capacity, corev1.ResourceMemory, resource.NewQuantity(7577*1024*1024, resource.BinarySI).String()},
		{n.Status.Capacity, corev1.ResourcePods, "58"},
		{n.Status.Capacity, corev1.ResourceEphemeralStorage, "80Gi"},
		{n.Status.Allocatable, corev1.ResourceCPU, "1920m"},
		{n.Status.Allocatable, corev1.ResourceMemory, resource.NewQuantity((7577-893-100)*1024*1024, resource.BinarySI).String()},
		{n.Status.Allocatable, corev1.ResourcePods, "58"},
	}
	for _, c := range checks {
		if got := qty(c.list, c.name); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	// The uninitialized taint goes after the configured delay.
	e.advance(500 * time.Millisecond)
	if len(e.sink.node(name).Spec.Taints) != 3 {
		t.Error("uninitialized taint removed too early")
	}
	e.advance(500 * time.Millisecond)
	if len(e.sink.node(name).Spec.Taints) != 2 {
		t.Errorf("uninitialized taint still present: %v", e.sink.node(name).Spec.Taints)
	}
	// Termination deletes the node once the instance is terminated.
	if err := e.sim.TerminateInstance(id, ""); err != nil {
		t.Fatal(err)
	}
	e.advance(time.Second)
	if e.sink.node(name) == nil {
		t.Error("node deleted while shutting down")
	}
	e.advance(time.Second)
	if e.sink.node(name) != nil {
		t.Error("node still present after termination")
	}
	if got := instanceByID(t, e, id).State; got != StateTerminated {
		t.Errorf("state = %s", got)
	}
}

func TestDefaultCapacityFromCatalog(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-empty", "arm64", "")
	id := launchOne(t, e, "lt-empty", "m7g.xlarge", "us-west-2b", ec2types.DefaultTargetCapacityTypeOnDemand)
	e.advance(2 * time.Second)
	n := e.sink.node(instanceByID(t, e, id).NodeName)
	if n == nil {
		t.Fatal("no node")
	}
	// m7g.xlarge: 4 vCPU, 16 GiB, 4 ENIs × 15 IPs → (4×14)+2 = 58 pods; kube-reserved cpu 60+10+5+5 = 80m,
	// memory 11×58+255 = 893Mi.
	pods := n.Status.Capacity[corev1.ResourcePods]
	cpu := n.Status.Allocatable[corev1.ResourceCPU]
	mem := n.Status.Allocatable[corev1.ResourceMemory]
	if pods.Value() != 58 || cpu.MilliValue() != 3920 || mem.Value() != (15155-893-100)*1024*1024 {
		t.Errorf("pods %s, allocatable cpu %s memory %s", pods.String(), cpu.String(), mem.String())
	}
	if n.Labels["kubernetes.io/arch"] != "arm64" || len(n.Spec.Taints) != 1 {
		t.Errorf("labels %v taints %v", n.Labels, n.Spec.Taints)
	}
}

func TestBadUserDataStillRuns(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-bad", "x86_64", "this is not a bootstrap document")
	id := launchOne(t, e, "lt-bad", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	e.advance(2 * time.Second)
	inst := instanceByID(t, e, id)
	if inst.State != StateRunning || inst.UserDataError == "" {
		t.Fatalf("instance = %+v", inst)
	}
	n := e.sink.node(inst.NodeName)
	if n == nil {
		t.Fatal("no node for an instance with bad user data")
	}
	if _, ok := n.Labels["karpenter.sh/nodepool"]; ok || len(n.Spec.Taints) != 1 {
		t.Errorf("node got user-data labels/taints: %v %v", n.Labels, n.Spec.Taints)
	}
}

func TestNodeSinkErrorsAreRetried(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-retry", "x86_64", "")
	id := launchOne(t, e, "lt-retry", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	e.sink.fail = errors.New("apiserver down")
	e.advance(2 * time.Second)
	if instanceByID(t, e, id).NodeCreated {
		t.Fatal("node marked created although the sink failed")
	}
	e.sink.fail = nil
	e.advance(100 * time.Millisecond)
	if !instanceByID(t, e, id).NodeCreated {
		t.Fatal("node not created on retry")
	}
}

func TestRandomTaintDelayWithinBounds(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Timing.UninitializedTaintDelayMin = time.Second
		o.Timing.UninitializedTaintDelayMax = 5 * time.Second
		o.Seed = 7
	})
	e.launchTemplate(t, "lt-rand", "x86_64", "")
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, launchOne(t, e, "lt-rand", "m5.large", "us-west-2c", ec2types.DefaultTargetCapacityTypeOnDemand))
	}
	e.advance(2 * time.Second)
	ready := func() int {
		n := 0
		for _, id := range ids {
			if instanceByID(t, e, id).NodeReady {
				n++
			}
		}
		return n
	}
	e.advance(999 * time.Millisecond)
	if r := ready(); r != 0 {
		t.Errorf("%d nodes initialized before the minimum delay", r)
	}
	for i := 0; i < 41; i++ {
		e.advance(100 * time.Millisecond)
	}
	if r := ready(); r != 5 {
		t.Errorf("%d of 5 nodes initialized after the maximum delay", r)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.sim.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRunAdvancesLifecycle(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-run-loop", "x86_64", "")
	id := launchOne(t, e, "lt-run-loop", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.sim.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !instanceByID(t, e, id).NodeCreated {
		if time.Now().After(deadline) {
			t.Fatal("Run did not create the node")
		}
		if e.clock.HasWaiters() {
			e.clock.Step(100 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
	if got := instanceByID(t, e, id).State; got != StateRunning {
		t.Errorf("state = %s", got)
	}
}
