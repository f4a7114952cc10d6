package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPodsBoundBeforeTheCacheShowsRegistration: registration writes the Node before the NodeClaim's
// status.nodeName, and the kube-scheduler may bind pods to the Node in between. A pass that sees the Node with a
// pod bound but the NodeClaim without status.nodeName must count that pod against the NodeClaim's room: in a
// 1,000-pod hostname-spread scale-out the last pods were planned, pass after pass, on room such pods had taken,
// and got their nodes 40-100 s late.
func TestPodsBoundBeforeTheCacheShowsRegistration(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	const providerID = "fake:///test-zone-a/i-registering"
	nc := test.NodeClaim("registering", "default").ProviderID(providerID).Launched(metav1.Now().Time).Obj()
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	nc.Status.Capacity = nc.Status.Allocatable.DeepCopy()
	node := test.Node("registering-node", providerID).Ready(true).Capacity(corev1.ResourceCPU, "2").
		Capacity(corev1.ResourceMemory, "8Gi").Label(karpv1.NodePoolLabelKey, "default").Obj()
	bound := test.Pod("bound").Requests("1500m", "1Gi").Obj()
	bound.Spec.NodeName = node.Name
	bound.Status.Phase = corev1.PodRunning
	pending := test.Pod("pending").Requests("1500m", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).
		WithObjects(test.NodePool("default").Obj(), nc, node, bound, pending).
		WithStatusSubresource(&karpv1.NodeClaim{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	c, _ := newTestController(api)
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	list := &karpv1.NodeClaimList{}
	if err := api.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("%d NodeClaims after the pass, want 2: the pending pod was planned on room the bound pod took", len(list.Items))
	}
}
