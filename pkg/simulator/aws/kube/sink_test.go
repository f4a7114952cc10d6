package kube

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

func spec() awssim.NodeSpec {
	return awssim.NodeSpec{
		Name:        "ip-10-0-0-4.us-west-2.compute.internal",
		ProviderID:  "aws:///us-west-2a/i-0a000000000000001",
		Labels:      map[string]string{"kubernetes.io/arch": "amd64"},
		Annotations: map[string]string{awssim.KwokNodeAnnotation: "fake"},
		Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
			{Key: awssim.UninitializedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")},
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.4"}},
	}
}

func TestNodeSink(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	sink := New(cs)
	s := spec()
	if err := sink.CreateNode(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := sink.CreateNode(ctx, s); err != nil {
		t.Fatalf("idempotent create: %v", err)
	}
	other := s
	other.ProviderID = "aws:///us-west-2a/i-other"
	if err := sink.CreateNode(ctx, other); err == nil {
		t.Error("create with a different providerID succeeded")
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.ProviderID != s.ProviderID || n.Annotations[awssim.KwokNodeAnnotation] != "fake" || len(n.Spec.Taints) != 2 {
		t.Errorf("node = %+v", n)
	}
	// Not Ready until kwok's kubelet says so, as a starting kubelet reports.
	var ready []string
	for _, c := range n.Status.Conditions {
		ready = append(ready, string(c.Type)+"="+string(c.Status)+"/"+c.Reason)
	}
	if d := cmp.Diff([]string{"Ready=False/KubeletNotReady"}, ready); d != "" {
		t.Errorf("conditions of a new Node (-want +got):\n%s", d)
	}
	if q := n.Status.Allocatable[corev1.ResourceCPU]; q.Cmp(resource.MustParse("1930m")) != 0 {
		t.Errorf("allocatable cpu = %s", q.String())
	}
	if err := sink.RemoveTaint(ctx, s.Name, awssim.UninitializedTaintKey); err != nil {
		t.Fatal(err)
	}
	n, _ = cs.CoreV1().Nodes().Get(ctx, s.Name, metav1.GetOptions{})
	if d := cmp.Diff([]corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}, n.Spec.Taints); d != "" {
		t.Errorf("taints (-want +got):\n%s", d)
	}
	if err := sink.DeleteNode(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if err := sink.DeleteNode(ctx, s.Name); err != nil {
		t.Fatalf("delete of a missing node: %v", err)
	}
	if err := sink.RemoveTaint(ctx, s.Name, "x"); err != nil {
		t.Fatalf("untaint of a missing node: %v", err)
	}
}
