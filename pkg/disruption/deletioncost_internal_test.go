package disruption

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestSortByDisruptionCost: consolidation looks first at the nodes whose pods cost least to move, read from
// karpenter.sh/disruption-cost, or, while the PodDeletionCostManagement gate is off, from
// controller.kubernetes.io/pod-deletion-cost; pod count, age and name break ties.
func TestSortByDisruptionCost(t *testing.T) {
	pod := func(name string, annotations ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for i := 0; i+1 < len(annotations); i += 2 {
			p.Annotations[annotations[i]] = annotations[i+1]
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptrTrue()}}
		return p
	}
	const million = "1000000000"
	cands := func() []*Candidate {
		return []*Candidate{
			{NodeClaim: "one-costly", Pods: []*corev1.Pod{pod("a", karpv1.DisruptionCostAnnotationKey, million)}},
			{NodeClaim: "two-plain", Pods: []*corev1.Pod{pod("b"), pod("c")}},
			{NodeClaim: "two-cheap", Pods: []*corev1.Pod{pod("d", corev1.PodDeletionCost, "-"+million), pod("e", corev1.PodDeletionCost, "-"+million)}},
			{NodeClaim: "one-plain", Pods: []*corev1.Pod{pod("f")}},
		}
	}
	names := func(cs []*Candidate) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.NodeClaim)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		managed bool
		want    []string
	}{
		{"gate off: both annotations count", false, []string{"two-cheap", "one-plain", "two-plain", "one-costly"}},
		{"gate on: pod-deletion-cost is ours, not read", true, []string{"one-plain", "two-cheap", "two-plain", "one-costly"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cands()
			sortByCost(cs, tc.managed)
			if d := cmp.Diff(tc.want, names(cs)); d != "" {
				t.Errorf("order (-want +got):\n%s", d)
			}
		})
	}
}

func ptrTrue() *bool { t := true; return &t }
