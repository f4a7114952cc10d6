package disruption

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/termination"
)

// mirrorPodAnnotation marks a static pod's mirror in the API server.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Reschedulable reports whether a pod bound to a disrupted node would have to run somewhere else: it is not
// terminal or terminating, not a DaemonSet pod (its DaemonSet runs a copy wherever it lands) and not a static pod.
func Reschedulable(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !p.DeletionTimestamp.IsZero() {
		return false
	}
	if _, ok := p.Annotations[mirrorPodAnnotation]; ok {
		return false
	}
	if o := metav1.GetControllerOf(p); o != nil && o.Kind == "DaemonSet" {
		return false
	}
	return true
}

// reschedulablePods returns the candidate's pods that would have to move.
func (c *Candidate) reschedulablePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.Pods {
		if Reschedulable(p) {
			out = append(out, p)
		}
	}
	return out
}

// blocker returns why no voluntary method may disrupt the candidate, whatever the method: not initialized,
// already deleting, a do-not-disrupt annotation on the node or an active one on one of its pods ("true", or a
// duration not yet elapsed at now since the pod started), a pod whose PodDisruptionBudget allows no disruption
// now, or no NodePool. It returns nil when nothing blocks.
func blocker(c *Candidate, pools map[string]*karpv1.NodePool, pdbs []*policyv1.PodDisruptionBudget, now time.Time) *Stay {
	stay := func(r StayReason, format string, args ...any) *Stay {
		return &Stay{NodeClaim: c.NodeClaim, Node: c.Node, Reason: r, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Deleting:
		return stay(StayDeleting, "node %s is already being deleted", c.Node)
	case !c.Initialized:
		return stay(StayNotInitialized, "nodeclaim %s is not initialized yet", c.NodeClaim)
	case pools[c.NodePool] == nil:
		return stay(StayNoNodePool, "nodepool %q of nodeclaim %s does not exist", c.NodePool, c.NodeClaim)
	case c.NodeAnnotations[karpv1.DoNotDisruptAnnotationKey] == "true":
		return stay(StayDoNotDisrupt, "node %s has the annotation %s=true", c.Node, karpv1.DoNotDisruptAnnotationKey)
	}
	for _, p := range c.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if d := termination.PodDoNotDisrupt(p, now); d.Active {
			return stay(StayDoNotDisrupt, "pod %s/%s has the annotation %s", p.Namespace, p.Name, d.Describe())
		}
	}
	for _, p := range c.reschedulablePods() {
		if capacitybuffer.IsVirtual(p) {
			continue // a buffer's room is no workload a PodDisruptionBudget protects
		}
		if pdb := blockingPDB(p, pdbs); pdb != nil {
			return stay(StayPDB, "pod %s/%s is covered by PodDisruptionBudget %s/%s, which allows no disruption now",
				p.Namespace, p.Name, pdb.Namespace, pdb.Name)
		}
	}
	return nil
}

// selectingPDBs returns the PodDisruptionBudgets in the pod's namespace whose selector matches it.
func selectingPDBs(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}

// blockingPDB returns a PodDisruptionBudget selecting the pod that allows no disruption, or nil.
func blockingPDB(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	for _, pdb := range pdbs {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil || pdb.Status.DisruptionsAllowed > 0 {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue // an invalid selector selects nothing (the disruption controller of kube does the same)
		}
		if sel.Matches(labels.Set(p.Labels)) {
			return pdb
		}
	}
	return nil
}

// sortByCost orders candidates: cheapest to disrupt first (nodeDisruptionCost: the pods' disruption-cost or
// pod-deletion-cost annotations and priorities, 1 for a pod without them), then fewer pods to move, then
// cheaper-to-lose (older) nodes, then name. managed is the PodDeletionCostManagement gate (see evictionCost).
func sortByCost(cs []*Candidate, managed bool) {
	// Each candidate's keys are worked out once: a comparison that counted the pods to move anew made this sort
	// most of a decision on a cluster of equal nodes (every comparison a tie on cost).
	type keyed struct {
		c     *Candidate
		cost  float64
		moved int
	}
	keys := make([]keyed, len(cs))
	for i, c := range cs {
		keys[i] = keyed{c: c, cost: nodeDisruptionCost(c.Pods, managed)}
		for _, p := range c.Pods {
			if Reschedulable(p) {
				keys[i].moved++
			}
		}
	}
	slices.SortStableFunc(keys, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.moved, b.moved), a.c.CreatedAt.Compare(b.c.CreatedAt),
			strings.Compare(a.c.NodeClaim, b.c.NodeClaim))
	})
	for i := range keys {
		cs[i] = keys[i].c
	}
}
