package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Labels of the disruption counters (Karpenter v1.15).
const (
	// LabelConsolidationPolicy is the NodePool's consolidationPolicy in snake case for a consolidation, "" for
	// other disruptions.
	LabelConsolidationPolicy = "consolidation_policy"
	// LabelTerminationMode is how the NodeClaim's pods are drained: graceful (no terminationGracePeriod),
	// eventual (one above zero) or forceful (zero).
	LabelTerminationMode = "termination_mode"
)

// Values of LabelTerminationMode.
const (
	TerminationModeGraceful = "graceful"
	TerminationModeEventual = "eventual"
	TerminationModeForceful = "forceful"
)

// newDisruptedMetrics makes karpenter_nodeclaims_disrupted_total and karpenter_pods_disruption_initiated_total,
// which share their labels.
func newDisruptedMetrics(m *Metrics) {
	disruptedLabels := []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode}
	m.NodeClaimsDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_disrupted_total", Help: helpOf("karpenter_nodeclaims_disrupted_total"),
	}, disruptedLabels)
	m.PodsDisruptionInitiated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_pods_disruption_initiated_total", Help: helpOf("karpenter_pods_disruption_initiated_total"),
	}, disruptedLabels)
}

// TerminationMode is the NodeClaim's termination_mode label value.
func TerminationMode(nc *karpv1.NodeClaim) string {
	switch {
	case nc.Spec.TerminationGracePeriod == nil:
		return TerminationModeGraceful
	case nc.Spec.TerminationGracePeriod.Duration <= 0:
		return TerminationModeForceful
	}
	return TerminationModeEventual
}

// ConsolidationPolicyLabel is a consolidationPolicy as the consolidation_policy label spells it (snake case:
// when_empty_or_underutilized, when_empty, balanced).
func ConsolidationPolicyLabel(p karpv1.ConsolidationPolicy) string {
	var b strings.Builder
	for i, r := range string(p) {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CountDisrupted counts a NodeClaim deleted by a disruption for reason in karpenter_nodeclaims_disrupted_total
// and its pods that must run elsewhere (pods) in karpenter_pods_disruption_initiated_total. policy is the
// consolidation_policy label ("" unless the disruption is a consolidation).
func (m *Metrics) CountDisrupted(nc *karpv1.NodeClaim, reason, policy string, pods int) {
	values := []string{reason, nc.NodePoolName(), nc.Labels[karpv1.CapacityTypeLabelKey], policy, TerminationMode(nc)}
	m.NodeClaimsDisrupted.WithLabelValues(values...).Inc()
	m.PodsDisruptionInitiated.WithLabelValues(values...).Add(float64(pods))
}
