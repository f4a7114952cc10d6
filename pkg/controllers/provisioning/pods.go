package provisioning

import (
	corev1 "k8s.io/api/core/v1"
)

// IsProvisionable reports whether Dovetail should find capacity for the pod: not bound, not terminal, not
// being deleted, not owned by a DaemonSet, and marked unschedulable by the kube-scheduler.
func IsProvisionable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || !p.DeletionTimestamp.IsZero() {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return false
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}
