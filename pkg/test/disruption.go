package test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
)

// CandidateBuilder builds disruption.Candidate values: test.Candidate("n1", "m.xlarge", 0.2).Pods(p).Obj().
type CandidateBuilder struct{ c *disruption.Candidate }

// Candidate starts an initialized, consolidatable, on-demand candidate of NodePool "default" in zone "a", whose
// NodeClaim and Node are both called name.
func Candidate(name, instanceType string, price float64) *CandidateBuilder {
	return &CandidateBuilder{c: &disruption.Candidate{
		NodeClaim: name, Node: name, NodePool: "default", InstanceType: instanceType, Zone: "a",
		CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Initialized: true, Consolidatable: true,
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}}
}

// Pool sets the NodePool.
func (b *CandidateBuilder) Pool(name string) *CandidateBuilder { b.c.NodePool = name; return b }

// Spot makes it a spot node.
func (b *CandidateBuilder) Spot() *CandidateBuilder {
	b.c.CapacityType = karpv1.CapacityTypeSpot
	return b
}

// Reserved makes it a node in the capacity reservation id.
func (b *CandidateBuilder) Reserved(id string) *CandidateBuilder {
	b.c.CapacityType, b.c.ReservationID = karpv1.CapacityTypeReserved, id
	return b
}

// Pods adds bound, running pods.
func (b *CandidateBuilder) Pods(pods ...*corev1.Pod) *CandidateBuilder {
	for _, p := range pods {
		p = p.DeepCopy()
		p.Spec.NodeName = b.c.Node
		p.Status.Phase = corev1.PodRunning
		b.c.Pods = append(b.c.Pods, p)
	}
	return b
}

// Drifted marks it drifted with reason.
func (b *CandidateBuilder) Drifted(reason string) *CandidateBuilder { b.c.Drifted = reason; return b }

// NotConsolidatable clears the Consolidatable flag (consolidateAfter has not passed).
func (b *CandidateBuilder) NotConsolidatable() *CandidateBuilder {
	b.c.Consolidatable = false
	return b
}

// NodeAnnotation sets an annotation of the Node.
func (b *CandidateBuilder) NodeAnnotation(k, v string) *CandidateBuilder {
	if b.c.NodeAnnotations == nil {
		b.c.NodeAnnotations = map[string]string{}
	}
	b.c.NodeAnnotations[k] = v
	return b
}

// Created sets the creation time.
func (b *CandidateBuilder) Created(t time.Time) *CandidateBuilder { b.c.CreatedAt = t; return b }

// Replacement marks it a node a disruption command launched at created.
func (b *CandidateBuilder) Replacement(created time.Time) *CandidateBuilder {
	b.c.Replacement, b.c.CreatedAt = true, created
	return b
}

// Obj returns the candidate.
func (b *CandidateBuilder) Obj() *disruption.Candidate { return b.c }

// Budget adds a disruption budget: nodes ("1", "10%"), optionally limited to reasons.
func (b *NodePoolBuilder) Budget(nodes string, reasons ...karpv1.DisruptionReason) *NodePoolBuilder {
	b.np.Spec.Disruption.Budgets = append(b.np.Spec.Disruption.Budgets, karpv1.Budget{Nodes: nodes, Reasons: reasons})
	return b
}

// ScheduledBudget adds a budget active for duration after each firing of the cron schedule.
func (b *NodePoolBuilder) ScheduledBudget(nodes, schedule string, duration time.Duration, reasons ...karpv1.DisruptionReason) *NodePoolBuilder {
	b.np.Spec.Disruption.Budgets = append(b.np.Spec.Disruption.Budgets, karpv1.Budget{Nodes: nodes, Reasons: reasons,
		Schedule: &schedule, Duration: &metav1.Duration{Duration: duration}})
	return b
}

// WhenEmpty sets consolidationPolicy: WhenEmpty.
func (b *NodePoolBuilder) WhenEmpty() *NodePoolBuilder {
	b.np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	return b
}
