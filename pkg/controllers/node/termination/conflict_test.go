package termination_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestConcurrentNodeUpdateIsRetriedQuietly: the Node is updated by someone else (a kubelet heartbeat, a user)
// between the node termination controller's read and its first write to it (the disrupted taint, conditions,
// finalizer). No pass returns an error, the node is drained and released, the instance terminated once, and the
// concurrent update was not undone while the Node was still there.
func TestConcurrentNodeUpdateIsRetriedQuietly(t *testing.T) {
	h := newHarness(t)
	nc, node := h.launch(nil)
	i := &test.Interferer{Raw: env.Client, Match: func(o client.Object) bool { _, ok := o.(*corev1.Node); return ok }}
	d := deps.Deps{Client: i.Client(env.Client), KubeClient: h.cs, CloudProvider: h.cloud, Clock: h.clock, Recorder: h.recorder, Metrics: h.metrics}
	ctrl := nodetermination.NewController(d)
	h.deleteClaim()
	h.reconcileClaim() // deletes the Node
	test.ReconcileUntil(t, ctrl, reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}}, i, 20, func() (bool, string) {
		h.reconcileClaim()
		got := h.getNode()
		if got == nil {
			return true, ""
		}
		if hit, _ := i.Interfered(); hit && got.Annotations[test.InterferedAnnotation] != "true" {
			t.Fatalf("a write undid the concurrent update of the node: annotations %v", got.Annotations)
		}
		return false, "node still there, finalizers " + join(got.Finalizers)
	})
	h.settle(5)
	if got := h.cloud.Deleted(); len(got) != 1 || got[0] != nc.Status.ProviderID {
		t.Errorf("terminated instances = %v, want [%s]", got, nc.Status.ProviderID)
	}
}

func join(s []string) string {
	out := ""
	for _, v := range s {
		out += v + " "
	}
	return out
}
