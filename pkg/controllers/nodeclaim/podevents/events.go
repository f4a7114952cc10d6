package podevents

import (
	corev1 "k8s.io/api/core/v1"
)

// A pod event is a change that makes a node busier or emptier: a pod bound to it, or a pod bound to it that
// starts terminating, finishes (Succeeded or Failed) or is deleted. Each function returns the node the event
// happened on, or "" when the change is not a pod event.

// onCreate: a pod created already bound (a mirror pod, or one with spec.nodeName set by its creator). Pods
// listed when the controller starts are not events: they were bound long before.
func onCreate(pod *corev1.Pod, initialList bool) string {
	if initialList || pod.Spec.NodeName == "" || terminal(pod) {
		return ""
	}
	return pod.Spec.NodeName
}

// onUpdate: a pod got bound, became terminal, or started terminating.
func onUpdate(old, pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" {
		return ""
	}
	switch {
	case old.Spec.NodeName == "":
		return pod.Spec.NodeName
	case !terminal(old) && terminal(pod):
		return pod.Spec.NodeName
	case old.DeletionTimestamp.IsZero() && !pod.DeletionTimestamp.IsZero() && !terminal(pod):
		return pod.Spec.NodeName
	}
	return ""
}

// onDelete: a bound pod went away without having been seen terminal (a terminal pod's removal changes
// nothing on the node).
func onDelete(pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" || terminal(pod) {
		return ""
	}
	return pod.Spec.NodeName
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
