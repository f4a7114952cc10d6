package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// NominationsOnOneNode decides which of the pods planned on one node may carry the node's name in
// status.nominatedNodeName; pods are in order of preference (those nominated there already first) and the answer
// is one flag a pod.
//
// When the kube-scheduler checks a pod against a node, it counts the other pods nominated to that node (of at
// least the pod's priority) as if they were bound there. For a topology spread on a key shared by several nodes
// (a zone) that count goes to the node's domain only, while the other domains keep their bound pods: two pods of
// one zone spread with maxSkew 1 nominated to one node would each keep the other off that node until pods are
// bound in the other zones, and with every zone's node holding two such nominations no pod of the spread could
// land anywhere. So a pod is nominated only while, for every such hard constraint of its own and of the pods
// nominated before it, the other nominated pods the constraint counts on the node stay below its maxSkew. The
// plan's counts per domain hold the rest: a pod left without a nomination is placed by the kube-scheduler
// wherever the spread allows, and the next pass plans from where it landed. Spreads over hostnames are left
// alone: the plan puts at most maxSkew matching pods on a node, and a node is a domain of its own.
func NominationsOnOneNode(pods []*corev1.Pod) []bool {
	ok := make([]bool, len(pods))
	spreads := make([][]nominationSpread, len(pods))
	any := false
	for i, p := range pods {
		spreads[i] = sharedDomainSpreads(p)
		any = any || len(spreads[i]) > 0
	}
	if !any {
		for i := range ok {
			ok[i] = true
		}
		return ok
	}
	var chosen []int
	for i, p := range pods {
		fits := true
		// The pod's own constraints, counting the pods nominated before it.
		for _, c := range spreads[i] {
			if counted(c, p, pods, chosen, -1) > c.maxSkew-1 {
				fits = false
				break
			}
		}
		// The constraints of the pods nominated before it, which would count it too.
		for _, j := range chosen {
			if !fits {
				break
			}
			q := pods[j]
			for _, c := range spreads[j] {
				if !counts(c, q, p) {
					continue
				}
				if counted(c, q, pods, chosen, j)+1 > c.maxSkew-1 {
					fits = false
					break
				}
			}
		}
		if fits {
			ok[i] = true
			chosen = append(chosen, i)
		}
	}
	return ok
}

// nominationSpread is a hard topology spread constraint of a pod on a key shared by nodes.
type nominationSpread struct {
	selector labels.Selector
	maxSkew  int
}

func sharedDomainSpreads(p *corev1.Pod) []nominationSpread {
	var out []nominationSpread
	for _, tsc := range p.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule || tsc.TopologyKey == labelHostname {
			continue
		}
		sel := selectorFor(tsc.LabelSelector)
		for _, k := range tsc.MatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		out = append(out, nominationSpread{selector: sel, maxSkew: int(tsc.MaxSkew)})
	}
	return out
}

// counts reports whether the kube-scheduler, checking owner against a node, counts other nominated there for
// owner's constraint c.
func counts(c nominationSpread, owner, other *corev1.Pod) bool {
	return other.Namespace == owner.Namespace && priority(other) >= priority(owner) &&
		c.selector.Matches(labels.Set(other.Labels))
}

// counted is how many of the chosen pods (but skip) owner's constraint c counts.
func counted(c nominationSpread, owner *corev1.Pod, pods []*corev1.Pod, chosen []int, skip int) int {
	n := 0
	for _, j := range chosen {
		if j != skip && counts(c, owner, pods[j]) {
			n++
		}
	}
	return n
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}
