package fake

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// matches reports whether a node with labels satisfies every requirement. A requirement on a key the labels
// lack is met only by NotIn and DoesNotExist.
func matches(labels map[string]string, reqs []corev1.NodeSelectorRequirement) bool {
	for _, r := range reqs {
		v, ok := labels[r.Key]
		if !matchOne(r, v, ok) {
			return false
		}
	}
	return true
}

func matchOne(r corev1.NodeSelectorRequirement, v string, ok bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
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

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
