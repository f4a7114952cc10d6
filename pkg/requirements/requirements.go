package requirements

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Match reports whether a label satisfies r; present says whether the label exists, value is its value.
//
// The semantics are those of labels.Requirement.Matches, which Kubernetes node affinity uses:
//   - In: the label exists and its value is one of r.Values.
//   - NotIn: the label is absent, or its value is none of r.Values.
//   - Exists / DoesNotExist: the label is present / absent; r.Values is not looked at.
//   - Gt / Lt: the label exists, r has exactly one value, and both are base-10 int64 integers with the label's
//     value strictly greater / less. Anything else (absent label, non-integer value or bound, zero or several
//     values) does not match.
//   - Gte / Lte (Karpenter's inclusive operators, valid in NodePool and NodeClaim requirements only): as Gt / Lt
//     with the bound included.
//   - Any other operator does not match.
//
// Match does not validate r. Pod validation rejects malformed requirements; NodePool and NodeClaim validation let
// NotIn without values and Exists or DoesNotExist with values through, and Match reads them as
// labels.Requirement.Matches and pkg/scheduling do: the values are ignored (NotIn of nothing allows anything).
func Match(r corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false
		}
		bound, err := strconv.ParseInt(r.Values[0], 10, 64)
		if err != nil {
			return false
		}
		switch r.Operator {
		case corev1.NodeSelectorOpGt:
			return have > bound
		case karpv1.NodeSelectorOpGte:
			return have >= bound
		case karpv1.NodeSelectorOpLte:
			return have <= bound
		}
		return have < bound
	}
	return false
}

// Matches reports whether labels satisfy every requirement whose key keep accepts; a nil keep evaluates every
// requirement. Requirements on kept keys are evaluated even when the label is absent, so "gpu-count Exists"
// rejects labels without a gpu count. keep lets a caller skip keys the labels cannot speak for (a NodePool's own
// labels say nothing about an instance type). An empty list is satisfied by any labels, as an empty nodeSelector is
// (Kubernetes reads an empty node-affinity term as matching nothing; callers that build terms handle that).
func Matches(reqs []corev1.NodeSelectorRequirement, labels map[string]string, keep func(key string) bool) bool {
	for _, r := range reqs {
		if keep != nil && !keep(r.Key) {
			continue
		}
		v, ok := labels[r.Key]
		if !Match(r, v, ok) {
			return false
		}
	}
	return true
}

// Allows reports whether a label key=value satisfies every requirement on key, ignoring the others: for values
// chosen by the cloud (capacity type, zone, instance type), whether value is allowed.
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
