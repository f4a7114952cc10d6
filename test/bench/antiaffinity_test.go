//go:build bench

package bench

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestScaleOutSelfAntiAffinity: pods that may not share a node with another pod of their Deployment
// (required pod anti-affinity on the hostname, against their own labels), so the scale-out launches a node per
// pod: the kube-scheduler's inter-pod affinity check, not a spread constraint, keeps them apart. It measures the
// time until every pod is Running, NodeClaims per pod and CreateFleet calls. DOVETAIL_BENCH_ANTI_PODS sets the pod
// count (default 500, the size).
func TestScaleOutSelfAntiAffinity(t *testing.T) {
	onePerNodeScaleOut(t, "anti", "self-anti-affinity", "DOVETAIL_BENCH_ANTI_PODS", 500, func(spec *corev1.PodSpec) {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}},
			}},
		}}
	})
}
