package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/metrics"
)

// ReasonDRARequests is the reason (FailedScheduling event message) given to a pending pod that asks for dynamic
// resource allocation: IGNORE_DRA_REQUESTS=true (Karpenter's default) leaves such pods out of provisioning, as
// Karpenter does. dovetailctl simulate and explain report such pods with it too.
const ReasonDRARequests = "the pod has dynamic resource allocation claims (spec.resourceClaims or a container's resources.claims), " +
	"which Dovetail does not provision for (IGNORE_DRA_REQUESTS=true)"

// hasDRARequests reports whether p asks for dynamic resource allocation: pod resource claims, or a container
// (init containers included) naming claims.
func hasDRARequests(p *corev1.Pod) bool { return metrics.AsksForDynamicResources(p) }

// withoutDRARequests returns pods without those asking for dynamic resource allocation, and those.
func withoutDRARequests(pods []*corev1.Pod) (rest, held []*corev1.Pod) {
	rest = pods[:0:0]
	for _, p := range pods {
		if hasDRARequests(p) {
			held = append(held, p)
			continue
		}
		rest = append(rest, p)
	}
	return rest, held
}
