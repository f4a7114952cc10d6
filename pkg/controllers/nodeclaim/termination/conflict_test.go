package termination_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestConcurrentUpdateIsRetriedQuietly: the NodeClaim is updated by someone else between the controller's read
// and its first write (the InstanceTerminating condition, then the finalizer). No pass returns an error, the
// instance is terminated once, the finalizer goes, and the concurrent update was not undone on the way.
func TestConcurrentUpdateIsRetriedQuietly(t *testing.T) {
	f := newFixture(t)
	nc := f.claim("interfered", nil, true, nil)
	i := &test.Interferer{Raw: env.Client, Match: func(o client.Object) bool { _, ok := o.(*karpv1.NodeClaim); return ok }}
	d := deps.Deps{Client: i.Client(env.Client), CloudProvider: f.cloud, Clock: f.clock, Recorder: f.recorder, Metrics: f.metrics}
	ctrl := termination.NewController(d)
	test.ReconcileUntil(t, ctrl, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}, i, 10, func() (bool, string) {
		got := f.get(nc.Name)
		if got == nil {
			return true, ""
		}
		if hit, _ := i.Interfered(); hit && got.Annotations[test.InterferedAnnotation] != "true" {
			t.Fatalf("a write undid the concurrent update: annotations %v", got.Annotations)
		}
		return false, "nodeclaim still there, finalizers " + join(got.Finalizers)
	})
	if n := len(f.cloud.Deleted()); n != 1 {
		t.Errorf("instance terminated %d times, want 1", n)
	}
}

func join(s []string) string {
	out := ""
	for _, v := range s {
		out += v + " "
	}
	return out
}
