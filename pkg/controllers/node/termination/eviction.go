package termination

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/termination"
)

// evict asks the Eviction API to evict the pod, unless a previous refusal's backoff has not run out. After a
// refusal it returns when to try again and why the pod is held (nil and "" when it need not be retried). An
// accepted eviction counts in karpenter_pods_drained_total under drained (see drainReason).
func (c *Controller) evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod, drained string) (*time.Time, string, error) {
	now := c.clock.Now()
	c.mu.Lock()
	b, waiting := c.backoffs[pod.UID]
	c.mu.Unlock()
	if waiting && now.Before(b.next) {
		next := b.next
		return &next, b.reason, nil
	}

	uid := pod.UID
	release, ok := c.evictionSlot(ctx, pod)
	if !ok {
		// Every eviction slot (or every one for the pod's budgets) is taken: try this pod again shortly rather
		// than hold a worker that drained nodes are waiting for. This is not a refusal: no backoff, no event.
		next := now.Add(evictionSlotWait)
		return &next, "", nil
	}
	err := c.clientset.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	release()
	if code, ok := metrics.EvictionCode(err); ok && c.metrics != nil {
		c.metrics.PodsEvictionRequests.WithLabelValues(code).Inc()
	}
	logger := log.FromContext(ctx).WithValues("pod", pod.Namespace+"/"+pod.Name)
	switch {
	case err == nil:
		if c.metrics != nil {
			c.metrics.PodsDrained.WithLabelValues(drained).Inc()
		}
		c.clearBackoff(pod)
		logger.Info("evicted pod")
		c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonEvicted, "Evicted pod: node %s is being terminated", node.Name)
		return nil, "", nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by a pod of the same name: nothing to evict.
		c.clearBackoff(pod)
		return nil, "", nil
	case apierrors.IsTooManyRequests(err):
		reason := c.budgetsBlocking(ctx, pod)
		next := c.refused(pod, now, reason)
		// The message stays the same across retries so that repeated refusals aggregate into one event.
		msg := fmt.Sprintf("Cannot evict pod %s/%s: %s; retrying with backoff", pod.Namespace, pod.Name, reason)
		logger.V(1).Info("eviction refused", "reason", err.Error(), "retry-after", next.Sub(now))
		c.event(pod, corev1.EventTypeWarning, ReasonEvictionBlocked, msg)
		c.event(node, corev1.EventTypeWarning, ReasonEvictionBlocked, msg)
		c.event(node, corev1.EventTypeWarning, ReasonFailedDraining, fmt.Sprintf("Failed to drain node: pod %s/%s cannot be evicted: %s", pod.Namespace, pod.Name, reason))
		return &next, reason, nil
	default:
		reason := fmt.Sprintf("eviction failed: %v", err)
		next := c.refused(pod, now, reason)
		msg := fmt.Sprintf("Evicting pod %s/%s failed: %v; retrying with backoff", pod.Namespace, pod.Name, err)
		logger.Error(err, "eviction failed", "retry-after", next.Sub(now))
		c.event(pod, corev1.EventTypeWarning, ReasonEvictionFailed, msg)
		c.event(node, corev1.EventTypeWarning, ReasonEvictionFailed, msg)
		return &next, reason, nil
	}
}

// evictionSlot takes a slot for one eviction request: one of maxConcurrentEvictions, and for a pod that
// PodDisruptionBudgets select, one of maxConcurrentEvictionsPerBudget for that set of budgets. It reports false,
// taking nothing, when either is full.
func (c *Controller) evictionSlot(ctx context.Context, pod *corev1.Pod) (release func(), ok bool) {
	select {
	case c.evictions <- struct{}{}:
	default:
		return nil, false
	}
	key := c.budgetKey(ctx, pod)
	if key == "" {
		return func() { <-c.evictions }, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.underBudget[key] >= maxConcurrentEvictionsPerBudget {
		<-c.evictions
		return nil, false
	}
	c.underBudget[key]++
	return func() {
		c.mu.Lock()
		if c.underBudget[key]--; c.underBudget[key] <= 0 {
			delete(c.underBudget, key)
		}
		c.mu.Unlock()
		<-c.evictions
	}, true
}

// budgetKey names the PodDisruptionBudgets that select the pod, from the cache ("" for none). When they cannot
// be read, the pod counts as under one budget of its namespace: contention is the safe guess.
func (c *Controller) budgetKey(ctx context.Context, pod *corev1.Pod) string {
	list := &policyv1.PodDisruptionBudgetList{}
	if err := c.kube.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
		return pod.Namespace + "/*"
	}
	var names []string
	for i := range list.Items {
		pdb := &list.Items[i]
		if pdb.Spec.Selector == nil {
			continue // selects no pod
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			return pod.Namespace + "/*"
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			names = append(names, pdb.Namespace+"/"+pdb.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// refused records one more refused eviction and returns when to retry.
func (c *Controller) refused(pod *corev1.Pod, now time.Time, reason string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoffs[pod.UID]
	b.failures++
	b.next = now.Add(termination.EvictionBackoff(b.failures))
	b.reason = reason
	c.backoffs[pod.UID] = b
	return b.next
}

func (c *Controller) clearBackoff(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.backoffs, pod.UID)
}

// budgetsBlocking names the PodDisruptionBudgets that select the pod, for events a user can act on.
func (c *Controller) budgetsBlocking(ctx context.Context, pod *corev1.Pod) string {
	list, err := c.clientset.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "a PodDisruptionBudget does not allow the disruption (listing budgets failed: " + err.Error() + ")"
	}
	var names []string
	for i := range list.Items {
		pdb := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		names = append(names, fmt.Sprintf("PodDisruptionBudget %s/%s (disruptionsAllowed=%d)",
			pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "the API server refused the eviction (429) but no PodDisruptionBudget selects the pod"
	}
	return "blocked by " + strings.Join(names, ", ")
}
