package termination

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BlockingVolumeAttachments returns the VolumeAttachments of the node that the instance must wait for before it
// is terminated, sorted by name. Attachments of persistent volumes used only by pods the drain leaves running
// (DaemonSet, static, tolerating pods) are skipped: those volumes detach only when the instance is gone.
// claimVolumes maps a pod's PersistentVolumeClaim (namespace/name) to the bound PersistentVolume's name.
func BlockingVolumeAttachments(nodeName string, attachments []*storagev1.VolumeAttachment, pods []*corev1.Pod,
	claimVolumes map[types.NamespacedName]string, now time.Time) []*storagev1.VolumeAttachment {
	// Volumes of pods that keep running until the instance is gone: their attachments never go away first.
	keptRunning := map[string]bool{}
	// Volumes of pods the drain removes: their attachments must go.
	drained := map[string]bool{}
	for _, pod := range pods {
		class := Classify(pod, now)
		target := keptRunning
		if class.Drainable() || class == ClassStuckTerminating {
			target = drained
		}
		if class == ClassTerminal {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if pv, ok := claimVolumes[types.NamespacedName{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}]; ok {
				target[pv] = true
			}
		}
	}
	var out []*storagev1.VolumeAttachment
	for _, va := range attachments {
		if va.Spec.NodeName != nodeName {
			continue
		}
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && keptRunning[*pv] && !drained[*pv] {
			continue
		}
		out = append(out, va)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
