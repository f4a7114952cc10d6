package disruption

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestComingNode: an extra replacement still launching holds the pods it was launched for while they still need
// it (waiting for a node, or on the command's own nodes), not those that found a node meanwhile or ended.
func TestComingNode(t *testing.T) {
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: phase}}
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range []*corev1.Pod{
		pod("waiting", "", corev1.PodPending),
		pod("on-candidate", "old-node", corev1.PodRunning),
		pod("landed", "other-node", corev1.PodRunning),
		pod("ended", "", corev1.PodSucceeded),
	} {
		pods[p.Namespace+"/"+p.Name] = p
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "extra", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Status: karpv1.NodeClaimStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	cand := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Status: karpv1.NodeClaimStatus{NodeName: "old-node"}}
	l := &Launch{Name: "extra", Extra: true, For: []string{"app/waiting", "app/on-candidate", "app/landed", "app/ended", "app/gone"}}
	n := comingNode(nc, l, pods, &InProgress{Candidates: []*karpv1.NodeClaim{cand}})
	var got []string
	for _, p := range n.Pods {
		if p.Spec.NodeName != "extra" {
			t.Errorf("pod %s placed on %q, want the coming node", p.Name, p.Spec.NodeName)
		}
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"waiting", "on-candidate"}, got); diff != "" {
		t.Errorf("pods held (-want +got)\n%s", diff)
	}
	if n.NodePool != "default" || n.Allocatable.Cpu().String() != "4" {
		t.Errorf("coming node %s in nodepool %q with %s cpu", n.Name, n.NodePool, n.Allocatable.Cpu())
	}
}
