package status_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/status"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestTransitionsAndFinalizers(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("default").Obj()
	np.UID = "np-uid"
	np.Finalizers = []string{"karpenter.sh/termination"}
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionUnknown, karpv1.ReasonUnknown, "")
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).WithObjects(np).Build()
	rec := test.NewRecorder()
	var c *status.Controller
	for _, k := range status.Kinds() {
		if k.Name == "nodepool" {
			c = status.NewKindController(deps.Deps{Client: kube, Recorder: rec}, k)
		}
	}
	ctx := context.Background()
	reconcileOnce := func() {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(f func(np *karpv1.NodePool)) {
		t.Helper()
		got := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
			t.Fatal(err)
		}
		// Each write returns the stored object, which lacks what the other writes: apply f before each.
		f(got)
		if err := kube.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		f(got)
		if err := kube.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOnce() // first sight: nothing to announce
	update(func(np *karpv1.NodePool) {
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNodeClassNotFound, `EC2NodeClass "default" not found`)
	})
	reconcileOnce()
	update(func(np *karpv1.NodePool) {
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNotReady, "other message")
	})
	reconcileOnce() // same status: no event
	update(func(np *karpv1.NodePool) { np.Finalizers = nil })
	reconcileOnce()
	want := []test.Event{
		{Kind: "NodePool", Name: "default", Type: corev1.EventTypeNormal, Reason: "NodeClassReady",
			Message: `Condition NodeClassReady went from Unknown to False (reason NodeClassNotFound): EC2NodeClass "default" not found`},
		{Kind: "NodePool", Name: "default", Type: corev1.EventTypeNormal, Reason: "Ready",
			Message: `Condition Ready went from Unknown to False (reason NodeClassNotFound): NodeClassReady: EC2NodeClass "default" not found`},
		{Kind: "NodePool", Name: "default", Type: corev1.EventTypeNormal, Reason: "Finalized", Message: "Finalizer karpenter.sh/termination removed"},
	}
	if diff := cmp.Diff(want, rec.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
