package scheduling

import corev1 "k8s.io/api/core/v1"

// ToleratesTaint reports whether the toleration covers the taint as the kube-scheduler of Kubernetes 1.34 decides
// (operators Equal, the default, and Exists; an empty key with Exists covers every taint, an empty effect every
// effect). The numeric operators Lt and Gt of Kubernetes 1.35 (alpha, feature gate TaintTolerationComparisonOperators)
// cover nothing, as in a kube-scheduler with that gate off.
func ToleratesTaint(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	default:
		return false
	}
}
