package metrics

import "github.com/prometheus/client_golang/prometheus"

// Values of LabelResult (metrics.go) for a pod-deletion-cost write (karpenter_pod_deletion_cost_pod_annotation_writes_total),
// as Karpenter v1.15 names them.
const (
	// DeletionCostUpdated: the annotation was written (or removed) as planned.
	DeletionCostUpdated = "updated"
	// DeletionCostUnchanged: a pod of a node whose pods were written already held its planned value.
	DeletionCostUnchanged = "skipped_unchanged"
	// DeletionCostNotFound: the pod was gone when the write reached the API server.
	DeletionCostNotFound = "skipped_notfound"
	// DeletionCostConflict: the pod had changed since it was read; the next pass reads it again.
	DeletionCostConflict = "skipped_conflict"
	// DeletionCostError: the write failed otherwise; the next pass tries again.
	DeletionCostError = "error"
)

// newDeletionCostMetrics makes the two metrics of the pod deletion cost controller (Karpenter v1.15's
// PodDeletionCostManagement gate).
func newDeletionCostMetrics(m *Metrics) {
	m.DeletionCostNodesPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes",
		Help: helpOf("karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes"),
	}, []string{LabelNodePool})
	m.DeletionCostWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_pod_deletion_cost_pod_annotation_writes_total",
		Help: helpOf("karpenter_pod_deletion_cost_pod_annotation_writes_total"),
	}, []string{LabelResult})
}

// RecordDeletionCostPass records a pass of the pod deletion cost controller: nodes are, by NodePool, how many
// nodes had at least one pod to write (NodePools without any lose their series), and writes the number of pod
// writes by LabelResult value.
func (m *Metrics) RecordDeletionCostPass(nodes map[string]int, writes map[string]int) {
	m.DeletionCostNodesPending.Reset()
	for pool, n := range nodes {
		m.DeletionCostNodesPending.WithLabelValues(pool).Set(float64(n))
	}
	for result, n := range writes {
		if n > 0 {
			m.DeletionCostWrites.WithLabelValues(result).Add(float64(n))
		}
	}
}
