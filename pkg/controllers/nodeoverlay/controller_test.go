package nodeoverlay

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/overlay"
	"github.com/dovetail/dovetail/pkg/test"
)

func nodeOverlay(name string, weight int32, price string) *karpv1alpha1.NodeOverlay {
	o := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	o.Spec.Requirements = []karpv1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists}}
	o.Spec.Weight = ptr.To(weight)
	o.Spec.Price = ptr.To(price)
	return o
}

// conditions returns "reason" of ValidationSucceeded and "status" of Ready, per overlay.
func conditions(t *testing.T, kube client.Client) map[string][2]string {
	t.Helper()
	list := &karpv1alpha1.NodeOverlayList{}
	if err := kube.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, o := range list.Items {
		v, r := o.GetCondition(karpv1alpha1.ConditionTypeValidationSucceeded), o.GetCondition(karpv1.ConditionTypeReady)
		if v == nil || r == nil {
			t.Fatalf("%s has conditions %+v", o.Name, o.Status.Conditions)
		}
		out[o.Name] = [2]string{v.Reason, string(r.Status)}
	}
	return out
}

func setup(t *testing.T, gate bool, objs ...client.Object) (*Controller, client.Client, *overlay.Store) {
	t.Helper()
	scheme, err := test.NewScheme(karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1alpha1.NodeOverlay{}).WithObjects(objs...).Build()
	cp := fake.New(clocktesting.NewFakeClock(time.Now()))
	d := deps.Deps{Client: kube, CloudProvider: cp}
	var store *overlay.Store
	if gate {
		store = overlay.NewStore()
		d.Overlays = store
		d.CloudProvider = overlay.Wrap(cp, store)
	}
	return NewController(d), kube, store
}

func TestReconcileConflict(t *testing.T) {
	c, kube, store := setup(t, true, test.NodePool("default").Obj(),
		nodeOverlay("a", 5, "1"), nodeOverlay("b", 5, "2"), nodeOverlay("c", 9, "3"))
	if _, ok := store.Applied(); ok {
		t.Fatal("store evaluated before the first reconcile")
	}
	res, err := c.Reconcile(context.Background(), all)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != Resync {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, Resync)
	}
	want := map[string][2]string{
		"a": {karpv1alpha1.ReasonConflict, "False"},
		"b": {karpv1alpha1.ConditionTypeValidationSucceeded, "True"},
		"c": {karpv1alpha1.ConditionTypeValidationSucceeded, "True"},
	}
	if diff := cmp.Diff(want, conditions(t, kube)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	applied, ok := store.Applied()
	var names []string
	for _, o := range applied {
		names = append(names, o.Name)
	}
	if !ok || !cmp.Equal(names, []string{"c", "b"}) {
		t.Errorf("store holds %v (evaluated %v), want [c b]", names, ok)
	}
	// Removing the conflicting overlay b clears a's conflict.
	if err := kube.Delete(context.Background(), nodeOverlay("b", 5, "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(context.Background(), all); err != nil {
		t.Fatal(err)
	}
	if got := conditions(t, kube)["a"]; got[1] != "True" {
		t.Errorf("a after b is gone: %v", got)
	}
}

func TestReconcileGateOff(t *testing.T) {
	c, kube, _ := setup(t, false, nodeOverlay("a", 5, "1"))
	if _, err := c.Reconcile(context.Background(), all); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"a": {karpv1alpha1.ReasonFeatureGateDisabled, "False"}}
	if diff := cmp.Diff(want, conditions(t, kube)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func TestReconcileNoOverlays(t *testing.T) {
	c, _, store := setup(t, true, test.NodePool("default").Obj())
	if _, err := c.Reconcile(context.Background(), all); err != nil {
		t.Fatal(err)
	}
	if applied, ok := store.Applied(); !ok || len(applied) != 0 {
		t.Errorf("store: %d applied, evaluated %v; want 0, true", len(applied), ok)
	}
}
