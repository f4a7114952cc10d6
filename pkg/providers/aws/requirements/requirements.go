package requirements

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Matches reports whether labels satisfy every requirement whose key known accepts. A nil known evaluates every
// requirement.
func Matches(reqs []corev1.NodeSelectorRequirement, labels map[string]string, known func(key string) bool) bool {
	for _, r := range reqs {
		if known != nil && !known(r.Key) {
			continue
		}
		if !Match(r, labels) {
			return false
		}
	}
	return true
}

// Match reports whether labels satisfy one requirement. Gt and Lt need an integer label value.
func Match(r corev1.NodeSelectorRequirement, labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(r.Values, v)
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

// Allows reports whether some value of key could satisfy the requirements on it: for key=value pairs chosen
// by the cloud (capacity type, zone), whether value is allowed.
func Allows(reqs []corev1.NodeSelectorRequirement, key, value string) bool {
	return Matches(reqs, map[string]string{key: value}, func(k string) bool { return k == key })
}

// SingleValues returns, for each key constrained to exactly one value by an In requirement, that value.
func SingleValues(reqs []corev1.NodeSelectorRequirement) map[string]string {
	out := map[string]string{}
	for _, r := range reqs {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			out[r.Key] = r.Values[0]
		}
	}
	return out
}
