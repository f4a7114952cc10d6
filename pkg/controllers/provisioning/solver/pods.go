package solver

import (
	corev1 "k8s.io/api/core/v1"
)

// IsProvisionable reports whether Dovetail should find capacity for the pod: not bound, not terminal, not
// being deleted, not owned by a DaemonSet, and marked unschedulable by the kube-scheduler.
func IsProvisionable(p *corev1.Pod) bool {
	if !unboundWorkload(p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// AwaitingScheduler reports whether the kube-scheduler has yet to decide about p: an unbound workload pod (see
// unboundWorkload), not held by scheduling gates, for the default scheduler, and without the kube-scheduler's
// "Unschedulable" verdict (IsProvisionable takes those). In a large scale-out many pods wait in the
// kube-scheduler's queue like this; they may yet need the NodeClaims the plan does not use now.
func AwaitingScheduler(p *corev1.Pod) bool {
	if !unboundWorkload(p) || len(p.Spec.SchedulingGates) > 0 {
		return false
	}
	if p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Reason != corev1.PodReasonSchedulingGated && !(c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable)
		}
	}
	return true
}

// unboundWorkload reports whether p is not bound, not terminal, not being deleted and not a DaemonSet's.
func unboundWorkload(p *corev1.Pod) bool {
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
	return true
}
