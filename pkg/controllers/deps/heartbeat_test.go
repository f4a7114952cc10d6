package deps_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestHeartbeatOnly: a kubelet's status report (resource version, heartbeat times, images) is a heartbeat; any
// change to what controllers read of a Node is not.
func TestHeartbeatOnly(t *testing.T) {
	base := func() *corev1.Node {
		n := test.Node("n1", "aws:///us-west-2a/i-1").Ready(true).Label("zone", "a").Obj()
		n.ResourceVersion = "1"
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		return n
	}
	later := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name      string
		change    func(*corev1.Node)
		heartbeat bool
	}{
		{"heartbeat", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = later
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
		}, true},
		{"transition time moved alone (kwok's heartbeat)", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = later
			n.Status.Conditions[0].LastTransitionTime = later
		}, true},
		{"images", func(n *corev1.Node) { n.Status.Images = []corev1.ContainerImage{{Names: []string{"pause"}}} }, true},
		{"label", func(n *corev1.Node) { n.Labels["zone"] = "b" }, false},
		{"annotation", func(n *corev1.Node) { n.Annotations = map[string]string{"a": "b"} }, false},
		{"finalizer", func(n *corev1.Node) { n.Finalizers = []string{"karpenter.sh/termination"} }, false},
		{"deleting", func(n *corev1.Node) { n.DeletionTimestamp = &later }, false},
		{"taint", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule})
		}, false},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }, false},
		{"provider id", func(n *corev1.Node) { n.Spec.ProviderID = "aws:///us-west-2a/i-2" }, false},
		{"condition status", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"condition reason", func(n *corev1.Node) { n.Status.Conditions[0].Reason = "KubeletNotReady" }, false},
		{"condition added", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "DiskPressure", Status: corev1.ConditionFalse})
		}, false},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("3") }, false},
		{"extended resource registered", func(n *corev1.Node) {
			n.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("1")
		}, false},
		{"addresses", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := base()
			cur := old.DeepCopy()
			tc.change(cur)
			if got := deps.HeartbeatOnly(old, cur); got != tc.heartbeat {
				t.Errorf("HeartbeatOnly = %v, want %v", got, tc.heartbeat)
			}
		})
	}
	if deps.HeartbeatOnly(test.Pod("p").Obj(), test.Pod("p").Obj()) {
		t.Error("a pod update taken for a Node heartbeat")
	}
}
