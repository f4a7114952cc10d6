package capacity_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/node/capacity"
	"github.com/dovetail/dovetail/pkg/test"
)

// learner records the Nodes it is taught from, with their NodeClaim and memory.
type learner struct {
	mu   sync.Mutex
	seen []string
}

func (l *learner) LearnNodeCapacity(_ context.Context, node *corev1.Node, nc *karpv1.NodeClaim) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, fmt.Sprintf("%s/%s/%s", node.Name, nc.Name, node.Status.Capacity.Memory()))
	return nil
}

func (l *learner) calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// TestRegisteredNodesTeachTheCloudProvider: a Node that registers for a NodeClaim is handed, with its NodeClaim,
// to the cloud provider's CapacityLearner once; a Node not (yet) registered, or of no NodeClaim, is not.
func TestRegisteredNodesTeachTheCloudProvider(t *testing.T) {
	l := &learner{}
	env := test.StartControllerEnv(t, func(d deps.Deps) test.Registrar {
		d.CapacityLearner = l
		return capacity.NewController(d)
	})
	ctx := context.Background()
	createClaim := func(name, providerID string) {
		t.Helper()
		nc := test.NodeClaim(name, "default").Obj()
		if err := env.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		nc.Status.ProviderID = providerID
		if err := env.Client.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	createNode := func(n *corev1.Node) {
		t.Helper()
		status := n.Status
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status = status
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	register := func(name string) *corev1.Node {
		t.Helper()
		n := &corev1.Node{}
		// From the API server: the manager's cache may not have the Node just created yet.
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels[karpv1.NodeRegisteredLabelKey] = "true"
		if err := env.Client.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	createClaim("default-abcde", "fake:///i-1")
	// Not registered yet, and a Node of no NodeClaim: nothing is learned.
	createNode(test.Node("node-1", "fake:///i-1").Capacity(corev1.ResourceMemory, "7800Mi").Obj())
	createNode(test.Node("stranger", "fake:///i-9").Obj())
	register("stranger")

	// Registration: the lifecycle controller labels the Node.
	n := register("node-1")
	want := []string{"node-1/default-abcde/7800Mi"}
	test.Eventually(t, 20*time.Second, func() (bool, string) {
		got := l.calls()
		return slices.Equal(got, want), fmt.Sprintf("learned from %q, want %q", got, want)
	})
	// A later change of the registered Node teaches nothing again; the next call is the next Node's.
	n.Labels["team"] = "a"
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	createClaim("default-fghij", "fake:///i-2")
	createNode(test.Node("node-2", "fake:///i-2").Capacity(corev1.ResourceMemory, "15Gi").Obj())
	register("node-2")
	want = append(want, "node-2/default-fghij/15Gi")
	test.Eventually(t, 20*time.Second, func() (bool, string) {
		got := l.calls()
		return slices.Equal(got, want), fmt.Sprintf("learned from %q, want %q", got, want)
	})
}
