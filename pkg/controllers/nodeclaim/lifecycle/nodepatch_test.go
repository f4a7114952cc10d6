package lifecycle

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			name: "keys are set one by one, escaped; the taint list is tested, then replaced",
			before: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "x"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}}},
			desired: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "x", "a/b~c": "1"}, Finalizers: []string{"karpenter.sh/termination"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{}}},
			want: `[{"op":"add","path":"/metadata/labels/a~1b~0c","value":"1"},` +
				`{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["karpenter.sh/termination"]},` +
				`{"op":"test","path":"/spec/taints","value":[{"key":"karpenter.sh/unregistered","effect":"NoExecute"}]},{"op":"add","path":"/spec/taints","value":[]}]`,
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
