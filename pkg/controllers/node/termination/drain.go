package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/termination"
)

// drainResult says whether the node is drained and when something next becomes due.
type drainResult struct {
	done   bool
	nextAt *time.Time
}

// podsOnNode lists the pods bound to the node, from the cache's spec.nodeName index (an API server client
// filters on the same field). Listing them from the API server on every pass of every node of a mass deletion
// (500 nodes, a pass every few seconds) loaded the API server that the evictions wait on.
func (c *Controller) podsOnNode(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.kube.List(ctx, list, client.MatchingFields{index.PodNodeName: nodeName}); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", nodeName, err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// drain carries out one step of the drain plan and records progress in the NodeClaim's Drained condition.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, w *conditionWrites, deadline *time.Time) (drainResult, error) {
	nc := w.nc
	pods, err := c.podsOnNode(ctx, node.Name)
	if err != nil {
		return drainResult{}, err
	}
	now := c.clock.Now()
	plan := termination.PlanDrain(termination.DrainInput{Now: now, Pods: pods, Deadline: deadline})
	res := drainResult{done: plan.Drained(), nextAt: plan.NextForcedDeletion}

	for _, d := range plan.Delete {
		if err := c.deletePod(ctx, node, d); err != nil {
			return drainResult{}, err
		}
	}
	// Why each pod still holds the node, for the Drained condition.
	held := map[*corev1.Pod]string{}
	for _, pod := range plan.Evict {
		next, reason, err := c.evict(ctx, node, pod, drainReason(nc))
		if err != nil {
			return drainResult{}, err
		}
		if reason != "" {
			held[pod] = reason
		}
		if next != nil && (res.nextAt == nil || next.Before(*res.nextAt)) {
			res.nextAt = next
		}
	}
	for _, pod := range plan.DoNotDisrupt {
		held[pod] = karpv1.DoNotDisruptAnnotationKey
	}
	for _, pod := range plan.DoNotDisrupt {
		dnd := termination.PodDoNotDisrupt(pod, now)
		msg := fmt.Sprintf("Pod %s/%s has %s: it is not evicted", pod.Namespace, pod.Name, dnd.Describe())
		if !dnd.Until.IsZero() {
			// The protection ends by itself: look again then.
			if res.nextAt == nil || dnd.Until.Before(*res.nextAt) {
				until := dnd.Until
				res.nextAt = &until
			}
			msg += " before then"
			if deadline != nil && deadline.Before(dnd.Until) {
				msg += fmt.Sprintf("; it is deleted so as to be gone by the end of the terminationGracePeriod at %s",
					termination.FormatDeadline(*deadline))
			}
		} else if deadline == nil {
			msg += " and the NodeClaim has no terminationGracePeriod, so the drain is blocked until the pod is " +
				"gone or the annotation is removed"
		} else {
			msg += fmt.Sprintf("; it is deleted so as to be gone by the end of the terminationGracePeriod at %s",
				termination.FormatDeadline(*deadline))
		}
		c.event(pod, corev1.EventTypeWarning, ReasonDoNotDisrupt, msg)
		c.event(node, corev1.EventTypeWarning, ReasonDoNotDisrupt, msg)
	}

	if nc != nil {
		status, reason, msg := metav1.ConditionTrue, ReasonDrained, ""
		switch {
		case !plan.Drained() && termination.Expired(deadline, now):
			reason = "TerminationGracePeriodElapsed"
			msg = fmt.Sprintf("terminationGracePeriod ended with %s left: %s", podCount(len(plan.Remaining)), podList(plan.Remaining, held))
		case !plan.Drained():
			status, reason = metav1.ConditionFalse, "Draining"
			msg = fmt.Sprintf("Waiting for %s to leave the node: %s", podCount(len(plan.Remaining)), podList(plan.Remaining, held))
			if len(plan.DoNotDisrupt) > 0 {
				reason = "DoNotDisrupt"
			}
			if drainedBefore(nc) {
				reason = ReasonPodsReturned
				msg = fmt.Sprintf("Pods came back after the node was drained: waiting for %s to leave the node: %s",
					podCount(len(plan.Remaining)), podList(plan.Remaining, held))
			}
		}
		c.setCondition(w, termination.ConditionTypeDrained, status, reason, msg)
	}
	if !res.done {
		log.FromContext(ctx).V(1).Info("draining", "remaining", len(plan.Remaining), "evicting", len(plan.Evict),
			"wave", plan.Wave.String())
	}
	return res, nil
}

// drainedBefore reports whether the NodeClaim's drain already finished once: its Drained condition is True with
// reason Drained, or False with reason PodsReturned (pods came back after that). The condition is the only record
// of it, so that the count of drained nodes survives controller restarts.
func drainedBefore(nc *karpv1.NodeClaim) bool {
	c := nc.GetCondition(termination.ConditionTypeDrained)
	if c == nil {
		return false
	}
	return (c.Status == metav1.ConditionTrue && c.Reason == ReasonDrained) || c.Reason == ReasonPodsReturned
}

// deletePod deletes a pod with a grace period shortened to fit the termination deadline.
func (c *Controller) deletePod(ctx context.Context, node *corev1.Node, d termination.Deletion) error {
	grace := d.GracePeriodSeconds
	err := c.clientset.CoreV1().Pods(d.Pod.Namespace).Delete(ctx, d.Pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      &metav1.Preconditions{UID: &d.Pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting pod %s/%s: %w", d.Pod.Namespace, d.Pod.Name, err)
	}
	msg := fmt.Sprintf("Deleting pod %s/%s with a %ds grace period: the NodeClaim's terminationGracePeriod is ending",
		d.Pod.Namespace, d.Pod.Name, grace)
	log.FromContext(ctx).Info("deleting pod for termination grace period", "pod", d.Pod.Namespace+"/"+d.Pod.Name,
		"grace-period-seconds", grace)
	c.recorder.Event(d.Pod, corev1.EventTypeNormal, ReasonPodDisrupted, msg+"; this bypasses its PodDisruptionBudgets and do-not-disrupt annotation")
	c.event(node, corev1.EventTypeWarning, ReasonGracePeriodDeletion, msg)
	return nil
}

// podList names up to five pods, each with why it is held when known.
func podList(list []*corev1.Pod, held map[*corev1.Pod]string) string {
	const max = 5
	var names []string
	for i, p := range list {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(list)-max))
			break
		}
		name := p.Namespace + "/" + p.Name
		switch {
		case held[p] != "":
			name += " (" + held[p] + ")"
		case termination.IsTerminating(p):
			name += " (terminating)"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// podCount renders a pod count.
func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// drainReason is the reason label of karpenter_pods_drained_total for the pods of a NodeClaim's node: the reason
// of its DisruptionReason condition when that is True (a voluntary disruption), "Forceful Termination" otherwise
// (a deletion by a user or by node repair), "" without a NodeClaim.
func drainReason(nc *karpv1.NodeClaim) string {
	if nc == nil {
		return ""
	}
	for _, c := range nc.Status.Conditions {
		if c.Type == karpv1.ConditionTypeDisruptionReason && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return "Forceful Termination"
}
