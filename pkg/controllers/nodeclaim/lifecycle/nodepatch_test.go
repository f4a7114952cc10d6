package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRegistrationPatch(t *testing.T) {
	taint := corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}
	team := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name            string
		before, desired *corev1.Node
		want            string
	}{
		{name: "nothing to change", before: &corev1.Node{}, desired: &corev1.Node{}},
		{
			name:    "no labels before: the map is added whole; no taints before: tested as null",
			before:  &corev1.Node{},
			desired: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a/b~c": "1"}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{team}}},
			want: `[{"op":"add","path":"/metadata/labels","value":{"a/b~c":"1"}},` +
				`{"op":"test","path":"/spec/taints","value":null},{"op":"add","path":"/spec/taints","value":[{"key":"team","value":"a","effect":"NoSchedule"}]}]`,
		},
		{
			name: "keys are set one by one, escaped; a dropped taint is tested where it was, then removed",
			before: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "x"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}}},
			desired: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "x", "a/b~c": "1"}, Finalizers: []string{"karpenter.sh/termination"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{}}},
			want: `[{"op":"add","path":"/metadata/labels/a~1b~0c","value":"1"},` +
				`{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["karpenter.sh/termination"]},` +
				`{"op":"test","path":"/spec/taints/0","value":{"key":"karpenter.sh/unregistered","effect":"NoExecute"}},{"op":"remove","path":"/spec/taints/0","value":null}]`,
		},
		{
			name: "taints of others are left alone: only the dropped one is tested and removed, the new one appended",
			before: &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}, taint, {Key: "other", Effect: corev1.TaintEffectNoSchedule}}}},
			desired: &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}, {Key: "other", Effect: corev1.TaintEffectNoSchedule}, team}}},
			want: `[{"op":"test","path":"/spec/taints/1","value":{"key":"karpenter.sh/unregistered","effect":"NoExecute"}},{"op":"remove","path":"/spec/taints/1","value":null},` +
				`{"op":"add","path":"/spec/taints/-","value":{"key":"team","value":"a","effect":"NoSchedule"}}]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := registrationPatch(tc.before, tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if got != nil {
					t.Fatalf("patch %s, want none", got)
				}
				return
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsStale(t *testing.T) {
	nodes := schema.GroupResource{Resource: "nodes"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "conflict", err: apierrors.NewConflict(nodes, "n", errors.New("changed")), want: true},
		{name: "a JSON patch test that failed: 422 without causes", err: apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", nodes, "n", "", 0, false), want: true},
		{name: "wrapped", err: fmt.Errorf("syncing node n: %w", apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", nodes, "n", "", 0, false)), want: true},
		{name: "validation names its fields", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "n", field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), "bad key", "invalid")})},
		{name: "not found", err: apierrors.NewNotFound(nodes, "n")},
		{name: "nil"},
	} {
		if got := isStale(tc.err); got != tc.want {
			t.Errorf("%s: isStale = %t, want %t", tc.name, got, tc.want)
		}
	}
}
