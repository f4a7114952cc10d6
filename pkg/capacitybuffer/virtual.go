package capacitybuffer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
)

// Annotations on virtual pods (Karpenter's names), so every consumer can tell them from real pods.
const (
	// VirtualPodAnnotation is "true" on a virtual buffer pod.
	VirtualPodAnnotation = "karpenter.sh/capacity-buffer-fake-pod"
	// BufferNameAnnotation and BufferNamespaceAnnotation name the buffer a virtual pod holds room for.
	BufferNameAnnotation      = "karpenter.sh/capacity-buffer-name"
	BufferNamespaceAnnotation = "karpenter.sh/capacity-buffer-namespace"
)

// VirtualPodPriority is the priority of virtual pods: below any real pod's, so that preemption-aware consumers
// rank them last. (The provisioner does not rely on it: it places real pods first, in a separate solve.)
const VirtualPodPriority = int32(-2147483647)

// IsVirtual reports whether the pod is a virtual buffer pod.
func IsVirtual(p *corev1.Pod) bool {
	return p != nil && p.Annotations[VirtualPodAnnotation] == "true"
}

// BufferKey is namespace/name of the buffer a virtual pod belongs to, "" for a real pod.
func BufferKey(p *corev1.Pod) string {
	if !IsVirtual(p) {
		return ""
	}
	return p.Annotations[BufferNamespaceAnnotation] + "/" + p.Annotations[BufferNameAnnotation]
}

// VirtualPods returns status.replicas pending pods of the template's shape for a ready buffer (nil otherwise),
// named capacity-buffer-<buffer>-<i> in the buffer's namespace with UIDs derived from the buffer's, so that
// passes see the same pods. The template's labels are kept (pod affinity and topology spread see them); its
// annotations are not. Volumes that need a claim are dropped (a buffer pod binds no storage), with their mounts.
func VirtualPods(cb *autoscalingv1beta1.CapacityBuffer, tpl corev1.PodTemplateSpec) []*corev1.Pod {
	if !Ready(cb) {
		return nil
	}
	spec := withoutClaims(*tpl.Spec.DeepCopy())
	spec.NodeName = ""
	prio := VirtualPodPriority
	spec.Priority = &prio
	spec.PriorityClassName = ""
	n := int(*cb.Status.Replicas)
	out := make([]*corev1.Pod, 0, n)
	for i := 1; i <= n; i++ {
		labels := map[string]string{}
		for k, v := range tpl.Labels {
			labels[k] = v
		}
		out = append(out, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("capacity-buffer-%s-%d", cb.Name, i),
				Namespace: cb.Namespace,
				UID:       types.UID(fmt.Sprintf("%s-%d", cb.UID, i)),
				Labels:    labels,
				Annotations: map[string]string{
					VirtualPodAnnotation:      "true",
					BufferNameAnnotation:      cb.Name,
					BufferNamespaceAnnotation: cb.Namespace,
				},
				CreationTimestamp: cb.CreationTimestamp,
			},
			Spec: *spec.DeepCopy(),
			Status: corev1.PodStatus{
				Phase: corev1.PodPending,
				Conditions: []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				}},
			},
		})
	}
	return out
}

// withoutClaims drops the volumes that need a PersistentVolumeClaim (persistent or ephemeral) and their mounts.
func withoutClaims(spec corev1.PodSpec) corev1.PodSpec {
	dropped := map[string]bool{}
	var keep []corev1.Volume
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			dropped[v.Name] = true
			continue
		}
		keep = append(keep, v)
	}
	if len(dropped) == 0 {
		return spec
	}
	spec.Volumes = keep
	strip := func(cs []corev1.Container) {
		for i := range cs {
			var mounts []corev1.VolumeMount
			for _, m := range cs[i].VolumeMounts {
				if !dropped[m.Name] {
					mounts = append(mounts, m)
				}
			}
			cs[i].VolumeMounts = mounts
		}
	}
	strip(spec.Containers)
	strip(spec.InitContainers)
	return spec
}
