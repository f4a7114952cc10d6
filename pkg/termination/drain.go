package termination

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DrainInput is what a drain decision looks at: the pods bound to the node, the time, and the NodeClaim's
// termination deadline (nil when it has no terminationGracePeriod).
type DrainInput struct {
	Now      time.Time
	Pods     []*corev1.Pod
	Deadline *time.Time
}

// Deletion is a pod to delete (not evict) with a shortened grace period because the node's deadline is near.
type Deletion struct {
	Pod                *corev1.Pod
	GracePeriodSeconds int64
}

// DrainPlan is what to do now on a draining node.
type DrainPlan struct {
	// Evict are pods to evict through the Eviction API now (PodDisruptionBudgets apply), all of the same wave.
	Evict []*corev1.Pod
	// Delete are pods to delete now, bypassing PodDisruptionBudgets and do-not-disrupt, because the
	// terminationGracePeriod leaves them no more than their own grace period.
	Delete []Deletion
	// DoNotDisrupt are pods of the current wave held by karpenter.sh/do-not-disrupt: they are not evicted and
	// wait for the deadline (forever when there is none).
	DoNotDisrupt []*corev1.Pod
	// Remaining are all pods the drain still waits for (evicted and terminating ones included), sorted by
	// namespace and name.
	Remaining []*corev1.Pod
	// Wave is the class being evicted now (ClassOrdinary, then ClassCritical); meaningless when drained.
	Wave Class
	// NextForcedDeletion is the earliest future time at which a pod becomes due for forced deletion; nil if
	// none will.
	NextForcedDeletion *time.Time
}

// Drained reports whether no pod holds the node any more.
func (p DrainPlan) Drained() bool { return len(p.Remaining) == 0 }

// PlanDrain decides what to do on a draining node. Pods of the ordinary wave are evicted first; critical pods
// only once no ordinary pod is left. DaemonSet pods, static pods, pods that tolerate the disrupted taint,
// terminal pods and pods stuck terminating are neither evicted nor waited for. With a deadline, each drainable
// pod is deleted (not evicted) from deadline minus its own grace period on, with a grace period equal to the time
// left, so that it is gone by the deadline; a pod already terminating with a longer grace is deleted again with
// the shorter one. The result is deterministic for a given input.
func PlanDrain(in DrainInput) DrainPlan {
	pods := append([]*corev1.Pod(nil), in.Pods...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})

	var plan DrainPlan
	forced := map[*corev1.Pod]bool{}
	waves := map[Class][]*corev1.Pod{}
	for _, pod := range pods {
		class := Classify(pod, in.Now)
		if !class.Drainable() {
			continue
		}
		plan.Remaining = append(plan.Remaining, pod)
		waves[class] = append(waves[class], pod)
		if in.Deadline == nil {
			continue
		}
		grace := PodGracePeriod(pod)
		due := ForcedDeletionAt(*in.Deadline, grace)
		if in.Now.Before(due) {
			if plan.NextForcedDeletion == nil || due.Before(*plan.NextForcedDeletion) {
				d := due
				plan.NextForcedDeletion = &d
			}
			continue
		}
		seconds := ForcedGracePeriodSeconds(*in.Deadline, in.Now, grace)
		forced[pod] = true
		// A terminating pod already due to be gone by the deadline needs nothing more.
		if IsTerminating(pod) && !pod.DeletionTimestamp.Time.After(*in.Deadline) {
			continue
		}
		plan.Delete = append(plan.Delete, Deletion{Pod: pod, GracePeriodSeconds: seconds})
	}

	plan.Wave = ClassOrdinary
	if len(waves[ClassOrdinary]) == 0 {
		plan.Wave = ClassCritical
	}
	for _, pod := range waves[plan.Wave] {
		if forced[pod] || IsTerminating(pod) {
			continue
		}
		if HasDoNotDisrupt(pod, in.Now) {
			plan.DoNotDisrupt = append(plan.DoNotDisrupt, pod)
			continue
		}
		plan.Evict = append(plan.Evict, pod)
	}
	return plan
}
