package readiness

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestConflictIsRetried(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	yes := metav1.ConditionTrue
	conflicts := test.NewConflictOnce(1)
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).
		WithObjects(test.NodePool("p").Obj(), nodeClass("default", &yes, "")).WithInterceptorFuncs(conflicts.Funcs()).Build()
	test.ReconcileThroughConflict(t, NewController(deps.Deps{Client: kube}), reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}, conflicts)
	np := &karpv1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "p"}, np); err != nil {
		t.Fatal(err)
	}
	if got := cond(np, karpv1.ConditionTypeReady); got != "True/Ready: " {
		t.Errorf("Ready after the retry = %s", got)
	}
}
