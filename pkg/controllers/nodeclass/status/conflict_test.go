package status_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail/dovetail/pkg/test"
)

// A conflict on the node class (another writer got there first) is retried, not reported.
func TestConflictIsRetried(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	conflicts := test.NewConflictOnce(1)
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&awsv1.EC2NodeClass{}).
		WithObjects(test.EC2NodeClass("default", "demo").Obj()).WithInterceptorFuncs(conflicts.Funcs()).Build()
	c := status.New(deps.Deps{Client: kube, Clock: clock.RealClock{}}, &fakeResolver{})
	test.ReconcileThroughConflict(t, c, reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}, conflicts)
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(nc.Finalizers, ","), awsv1.TerminationFinalizer) || len(nc.Status.Subnets) == 0 {
		t.Errorf("after the retry: finalizers %v, subnets %v", nc.Finalizers, nc.Status.Subnets)
	}
}
