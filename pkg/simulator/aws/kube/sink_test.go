package kube

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

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

func gpuSlice(name, node, product string) resourcev1.ResourceSlice {
	s := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", NodeName: &node,
		Pool:    resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"productName": {StringValue: &product}}}},
	}}
	s.Name = name
	return s
}

// sliceSummary is a slice as the tests compare it: name, node, owner and product of its first device.
func sliceSummary(list []resourcev1.ResourceSlice) []string {
	var out []string
	for _, s := range list {
		owner := ""
		for _, o := range s.OwnerReferences {
			owner += o.Kind + "/" + o.Name + "/" + string(o.UID)
		}
		out = append(out, s.Name+" "+*s.Spec.NodeName+" "+owner+" "+*s.Spec.Devices[0].Attributes["productName"].StringValue)
	}
	return out
}

func TestNodeSinkResourceSlices(t *testing.T) {
	ctx := context.Background()
	s := spec()
	other := "ip-10-0-0-5.us-west-2.compute.internal"
	// A slice of another node, which deleting this node must leave, and a stale slice of an earlier Node of the
	// same name, which creating this node must replace.
	stale := gpuSlice(s.Name+"-gpu.nvidia.com-0", s.Name, "Tesla T4")
	stale.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: s.Name, UID: "old-uid"}}
	kept := gpuSlice(other+"-gpu.nvidia.com-0", other, "NVIDIA L4")
	cs := fake.NewClientset(&stale, &kept)
	// The fake clientset assigns no UIDs: give the Node one as the API server does.
	cs.PrependReactor("create", "nodes", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Node).UID = "node-uid"
		return false, nil, nil
	})
	sink := New(cs)
	s.ResourceSlices = []resourcev1.ResourceSlice{gpuSlice(s.Name+"-gpu.nvidia.com-0", s.Name, "NVIDIA A10G"), gpuSlice(s.Name+"-dra.net-0", s.Name, "EFA")}
	for range 2 { // the second call is a retry after a failure: nothing changes
		if err := sink.CreateNode(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		s.Name + "-dra.net-0 " + s.Name + " Node/" + s.Name + "/node-uid EFA",
		s.Name + "-gpu.nvidia.com-0 " + s.Name + " Node/" + s.Name + "/node-uid NVIDIA A10G",
		other + "-gpu.nvidia.com-0 " + other + "  NVIDIA L4",
	}
	if d := cmp.Diff(want, sliceSummary(list.Items)); d != "" {
		t.Errorf("slices after CreateNode (-want +got):\n%s", d)
	}
	if err := sink.DeleteNode(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	list, err = cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want[2:], sliceSummary(list.Items)); d != "" {
		t.Errorf("slices after DeleteNode (-want +got):\n%s", d)
	}
}
