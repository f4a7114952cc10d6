package awssim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeSink receives the Node side of the instance lifecycle. The kube subpackage implements it with client-go;
// tests use a fake.
type NodeSink interface {
	// CreateNode registers the Node of an instance that became running.
	CreateNode(ctx context.Context, spec NodeSpec) error
	// DeleteNode removes the Node of a terminated instance; a missing Node is not an error.
	DeleteNode(ctx context.Context, name string) error
	// RemoveTaint removes a taint (by key) from a Node, as the cloud controller manager does.
	RemoveTaint(ctx context.Context, name, key string) error
}

// DeviceModels answers which ResourceSlices the DRA drivers on a node of an instance type publish (pkg/dra/devices
// implements it).
type DeviceModels interface {
	// Slices returns the ResourceSlices of node nodeName of type instanceType; none for a type without devices.
	Slices(instanceType, nodeName string) []resourcev1.ResourceSlice
}

// UninitializedTaintKey is the taint the cloud controller manager removes once it has initialized a Node.
const UninitializedTaintKey = "node.cloudprovider.kubernetes.io/uninitialized"

// KwokNodeAnnotation marks Nodes kwok manages.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// NodeSpec is everything needed to create the Node of an instance.
type NodeSpec struct {
	Name        string
	ProviderID  string
	InstanceID  string
	Labels      map[string]string
	Annotations map[string]string
	Taints      []corev1.Taint
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	Addresses   []corev1.NodeAddress
	// BootID is the Node's status.nodeInfo.bootID; it changes with every reboot of the instance.
	BootID string
	// ResourceSlices are the slices the node's DRA drivers publish once the Node exists (spec.nodeName set to
	// Name); the sink removes them with the Node.
	ResourceSlices []resourcev1.ResourceSlice
}

// Node builds the corev1.Node for the spec (status included; callers creating it must set the status
// through the status subresource).
func (n NodeSpec) Node() *corev1.Node {
	node := &corev1.Node{}
	node.Name = n.Name
	node.Labels = copyMap(n.Labels)
	node.Annotations = copyMap(n.Annotations)
	node.Spec.ProviderID = n.ProviderID
	node.Spec.Taints = append([]corev1.Taint(nil), n.Taints...)
	node.Status.Capacity = n.Capacity.DeepCopy()
	node.Status.Allocatable = n.Allocatable.DeepCopy()
	node.Status.Addresses = append([]corev1.NodeAddress(nil), n.Addresses...)
	node.Status.Phase = corev1.NodeRunning
	// A starting kubelet reports its Node not Ready in its first status: the controller-manager then keeps the
	// node.kubernetes.io/not-ready taint on it until the kubelet (kwok here) reports Ready. A Node without any
	// Ready condition loses that taint at once, and the kube-scheduler could bind pods to it before kwok
	// manages the Node; kwok never runs such pods.
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "kubelet is starting", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	node.Status.NodeInfo = corev1.NodeSystemInfo{
		Architecture:    n.Labels[corev1.LabelArchStable],
		OperatingSystem: n.Labels[corev1.LabelOSStable],
		KubeletVersion:  n.Annotations["awssim.dovetail.dev/kubelet-version"],
		OSImage:         "awssim",
		BootID:          n.BootID,
	}
	return node
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
