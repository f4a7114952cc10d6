package hash

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestConflictIsRetried(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	conflicts := test.NewConflictOnce(1)
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("p").Obj()).
		WithInterceptorFuncs(conflicts.Funcs()).Build()
	test.ReconcileThroughConflict(t, NewController(deps.Deps{Client: kube}), reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}, conflicts)
	np := &karpv1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "p"}, np); err != nil {
		t.Fatal(err)
	}
	if np.Annotations[karpv1.NodePoolHashAnnotationKey] != hashversion.NodePool(np) {
		t.Errorf("hash annotation %q after the retry, want %q", np.Annotations[karpv1.NodePoolHashAnnotationKey], hashversion.NodePool(np))
	}
}
