package lifecycle

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestRegistrationPatchBesideTaintWrites applies a registration patch on a real API server after another writer
// (the node lifecycle controller) added a taint since the Node was read: the patch still applies and keeps that
// taint. A taint lifted before the one registration removes moves it, and the patch is refused as stale.
func TestRegistrationPatchBesideTaintWrites(t *testing.T) {
	ctx := context.Background()
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := test.StartEnv(t, s).Client
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	unreachable := corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}
	team := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{notReady, unregistered}}}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	read := node.DeepCopy()
	desired := read.DeepCopy()
	desired.Spec.Taints = []corev1.Taint{notReady, team}
	desired.Labels = map[string]string{karpv1.NodeRegisteredLabelKey: "true"}
	body, err := registrationPatch(read, desired)
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile: unreachable added.
	node.Spec.Taints = append(node.Spec.Taints, unreachable)
	if err := kube.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := kube.Patch(ctx, desired.DeepCopy(), client.RawPatch(types.JSONPatchType, body)); err != nil {
		t.Fatalf("registration patch after another writer added a taint: %v", err)
	}
	got := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "n"}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]corev1.Taint{notReady, unreachable, team}, got.Spec.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	if got.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		t.Errorf("registered label missing: %v", got.Labels)
	}

	// A second Node whose not-ready taint, before the unregistered one, is lifted meanwhile.
	moved := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{notReady, unregistered}}}
	if err := kube.Create(ctx, moved); err != nil {
		t.Fatal(err)
	}
	read = moved.DeepCopy()
	desired = read.DeepCopy()
	desired.Spec.Taints = []corev1.Taint{notReady}
	if body, err = registrationPatch(read, desired); err != nil {
		t.Fatal(err)
	}
	moved.Spec.Taints = []corev1.Taint{unregistered}
	if err := kube.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := kube.Patch(ctx, desired, client.RawPatch(types.JSONPatchType, body)); !isStale(err) {
		t.Errorf("patch whose taint moved: got %v, want a stale refusal", err)
	}
}
