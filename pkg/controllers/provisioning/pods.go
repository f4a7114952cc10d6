package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/metrics"
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

// awaitingScheduler reports whether the kube-scheduler has yet to decide about p: an unbound workload pod (see
// unboundWorkload), not held by scheduling gates, for the default scheduler, and without the kube-scheduler's
// "Unschedulable" verdict (IsProvisionable takes those). In a large scale-out many pods wait in the
// kube-scheduler's queue like this; they may yet need the NodeClaims the plan does not use now.
func awaitingScheduler(p *corev1.Pod) bool {
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

// ReasonDRARequests is the reason (FailedScheduling event message) given to a pending pod that asks for dynamic
// resource allocation: IGNORE_DRA_REQUESTS=true (Karpenter's default) leaves such pods out of provisioning, as
// Karpenter does. dovetailctl simulate and explain report such pods with it too.
const ReasonDRARequests = "the pod has dynamic resource allocation claims (spec.resourceClaims or a container's resources.claims), " +
	"which Dovetail does not provision for (IGNORE_DRA_REQUESTS=true)"

// hasDRARequests reports whether p asks for dynamic resource allocation: pod resource claims, or a container
// (init containers included) naming claims.
func hasDRARequests(p *corev1.Pod) bool { return metrics.AsksForDynamicResources(p) }

// withoutDRARequests returns pods without those asking for dynamic resource allocation, and those.
func withoutDRARequests(pods []*corev1.Pod) (rest, held []*corev1.Pod) {
	rest = pods[:0:0]
	for _, p := range pods {
		if hasDRARequests(p) {
			held = append(held, p)
			continue
		}
		rest = append(rest, p)
	}
	return rest, held
}
