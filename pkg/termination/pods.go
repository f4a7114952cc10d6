package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Priority classes whose pods are evicted last, after every other pod on the node is gone.
const (
	SystemClusterCritical = "system-cluster-critical"
	SystemNodeCritical    = "system-node-critical"
)

// MirrorPodAnnotationKey marks the API server's copy of a static pod run by the kubelet from a manifest.
const MirrorPodAnnotationKey = corev1.MirrorPodAnnotationKey

// StuckTerminatingAfter is how long past the end of its own grace period a terminating pod may linger before
// the drain stops waiting for it (its kubelet is presumably gone).
const StuckTerminatingAfter = time.Minute

// DefaultPodTerminationGracePeriod is what the API server defaults terminationGracePeriodSeconds to.
const DefaultPodTerminationGracePeriod = 30 * time.Second

// Class is what a drain does with a pod.
type Class int

const (
	// ClassOrdinary pods are evicted in the first wave.
	ClassOrdinary Class = iota
	// ClassCritical pods (system-cluster-critical, system-node-critical) are evicted once no ordinary pod is left.
	ClassCritical
	// ClassDaemonSet pods are node agents (CNI, CSI, log shippers): never evicted, they run until the instance
	// is gone, whether or not they tolerate the disrupted taint.
	ClassDaemonSet
	// ClassStatic pods are run by the kubelet from manifests; the API holds only a read-only mirror.
	ClassStatic
	// ClassToleratesDisrupted pods tolerate karpenter.sh/disrupted:NoSchedule and would be scheduled right back;
	// they are not evicted (as in Karpenter).
	ClassToleratesDisrupted
	// ClassTerminal pods have succeeded or failed; nothing is left to stop.
	ClassTerminal
	// ClassStuckTerminating pods were deleted and are more than StuckTerminatingAfter past their grace period;
	// the drain no longer waits for them.
	ClassStuckTerminating
)

var classNames = map[Class]string{
	ClassOrdinary:           "Ordinary",
	ClassCritical:           "Critical",
	ClassDaemonSet:          "DaemonSet",
	ClassStatic:             "Static",
	ClassToleratesDisrupted: "ToleratesDisrupted",
	ClassTerminal:           "Terminal",
	ClassStuckTerminating:   "StuckTerminating",
}

func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return "Unknown"
}

// Drainable reports whether the drain evicts pods of this class and waits for them to be gone.
func (c Class) Drainable() bool { return c == ClassOrdinary || c == ClassCritical }

// Classify says what a drain does with pod at time now. The order of the checks matters: a terminal DaemonSet
// pod is Terminal, a static pod that tolerates everything is Static.
func Classify(pod *corev1.Pod, now time.Time) Class {
	switch {
	case IsTerminal(pod):
		return ClassTerminal
	case IsStatic(pod):
		return ClassStatic
	case IsDaemonSetPod(pod):
		return ClassDaemonSet
	case IsStuckTerminating(pod, now):
		return ClassStuckTerminating
	case ToleratesDisruptedTaint(pod):
		return ClassToleratesDisrupted
	case IsCritical(pod):
		return ClassCritical
	default:
		return ClassOrdinary
	}
}

// IsTerminal reports whether the pod has succeeded or failed.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsStatic reports whether the pod is the mirror of a static pod (annotated, or owned by its Node).
func IsStatic(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "Node" && ref.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// IsDaemonSetPod reports whether a DaemonSet owns the pod.
func IsDaemonSetPod(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && (ref.APIVersion == "apps/v1" || ref.APIVersion == "extensions/v1beta1") {
			return true
		}
	}
	return false
}

// IsCritical reports whether the pod runs at a system-critical priority class.
func IsCritical(pod *corev1.Pod) bool {
	return pod.Spec.PriorityClassName == SystemClusterCritical || pod.Spec.PriorityClassName == SystemNodeCritical
}

// IsTerminating reports whether the pod has been deleted.
func IsTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// IsStuckTerminating reports whether the pod was deleted and is more than StuckTerminatingAfter past the end of
// its grace period (the pod's deletionTimestamp).
func IsStuckTerminating(pod *corev1.Pod, now time.Time) bool {
	return pod.DeletionTimestamp != nil && now.Sub(pod.DeletionTimestamp.Time) > StuckTerminatingAfter
}

// ToleratesDisruptedTaint reports whether the pod tolerates karpenter.sh/disrupted:NoSchedule.
func ToleratesDisruptedTaint(pod *corev1.Pod) bool {
	taint := karpv1.DisruptedNoScheduleTaint()
	for i := range pod.Spec.Tolerations {
		if scheduling.ToleratesTaint(&pod.Spec.Tolerations[i], &taint) {
			return true
		}
	}
	return false
}

// HasDoNotDisrupt reports whether the pod's karpenter.sh/do-not-disrupt annotation protects it at now ("true",
// or a duration not yet elapsed since the pod started; see PodDoNotDisrupt).
func HasDoNotDisrupt(pod *corev1.Pod, now time.Time) bool {
	return PodDoNotDisrupt(pod, now).Active
}

// PodGracePeriod returns the pod's terminationGracePeriodSeconds, or the API default when unset.
func PodGracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return DefaultPodTerminationGracePeriod
	}
	if *pod.Spec.TerminationGracePeriodSeconds < 0 {
		return 0
	}
	return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
}
