package cloudprovider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairPolicy says which Node condition makes a node unhealthy, and for how long it is tolerated before the node
// is repaired (its NodeClaim force-deleted and replaced) when the NodeRepair feature gate is on.
type RepairPolicy struct {
	// ConditionType is the Node condition to watch, e.g. Ready or a node-monitoring-agent condition.
	ConditionType corev1.NodeConditionType
	// ConditionStatus is the status that marks the node unhealthy.
	ConditionStatus corev1.ConditionStatus
	// TolerationDuration is how long the condition must have held (since its lastTransitionTime) before repair.
	TolerationDuration time.Duration
	// TerminationGracePeriod bounds the drain of a node repaired as a disruption method (Karpenter v1.15): its pods
	// are deleted when it ends, PodDisruptionBudgets or not. The NodeClaim's own terminationGracePeriod applies
	// when shorter, and alone when this is nil. The legacy repair controller deletes every pod at once.
	TerminationGracePeriod *time.Duration
}
