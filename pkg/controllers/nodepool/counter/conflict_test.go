package counter

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestConflictIsRetried(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	conflicts := test.NewConflictOnce(1)
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).WithObjects(
		test.NodePool("web").Obj(),
		withCapacity(test.NodeClaim("web-a", "web").Finalizer(karpv1.TerminationFinalizer).Obj(), "2", "4Gi"),
	).WithInterceptorFuncs(conflicts.Funcs()).Build()
	c := NewController(deps.Deps{Client: kube, Metrics: metrics.NewForTest()})
	test.ReconcileThroughConflict(t, c, reconcile.Request{NamespacedName: types.NamespacedName{Name: "web"}}, conflicts)
	np := &karpv1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "web"}, np); err != nil {
		t.Fatal(err)
	}
	if np.Status.Nodes == nil || *np.Status.Nodes != 1 {
		t.Errorf("status.nodes after the retry = %v, want 1", np.Status.Nodes)
	}
}
