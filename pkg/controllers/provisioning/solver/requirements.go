package solver

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Match reports whether a label value (present or not) satisfies one requirement.
func Match(r corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

// MatchLabels reports whether labels satisfy every requirement.
func MatchLabels(labels map[string]string, reqs []corev1.NodeSelectorRequirement) bool {
	for _, r := range reqs {
		v, ok := labels[r.Key]
		if !Match(r, v, ok) {
			return false
		}
	}
	return true
}

// PodRequirementTerms returns the pod's node requirements as alternatives (OR): each term is the nodeSelector
// plus one required node-affinity term. A pod without required affinity has a single term.
func PodRequirementTerms(p *corev1.Pod) [][]corev1.NodeSelectorRequirement {
	var base []corev1.NodeSelectorRequirement
	keys := make([]string, 0, len(p.Spec.NodeSelector))
	for k := range p.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		base = append(base, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{p.Spec.NodeSelector[k]}})
	}
	aff := p.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		len(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		return [][]corev1.NodeSelectorRequirement{base}
	}
	var terms [][]corev1.NodeSelectorRequirement
	for _, t := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		term := append(append([]corev1.NodeSelectorRequirement(nil), base...), t.MatchExpressions...)
		terms = append(terms, term)
	}
	return terms
}

// Tolerates reports whether the tolerations tolerate every NoSchedule and NoExecute taint.
func Tolerates(tolerations []corev1.Toleration, taints []corev1.Taint) (bool, *corev1.Taint) {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(t) {
				ok = true
				break
			}
		}
		if !ok {
			return false, t
		}
	}
	return true, nil
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
