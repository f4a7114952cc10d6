package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// CountNodeClaimCreated counts a NodeClaim created for reason (provisioned, or a disruption reason for a
// replacement): min_values_relaxed is its karpenter.sh/nodeclaim-min-values-relaxed annotation, "false" without one.
func (m *Metrics) CountNodeClaimCreated(reason, nodePool string, nc *karpv1.NodeClaim) {
	relaxed := nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]
	if relaxed == "" {
		relaxed = "false"
	}
	m.NodeClaimsCreated.WithLabelValues(reason, nodePool, relaxed).Inc()
}

// CountNodeClaimTerminated counts a NodeClaim whose termination finished, by its NodePool, capacity type and
// zone labels.
func (m *Metrics) CountNodeClaimTerminated(nc *karpv1.NodeClaim) {
	m.NodeClaimsTerminated.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[karpv1.CapacityTypeLabelKey],
		nc.Labels[corev1.LabelTopologyZone]).Inc()
}

// CountNodeCreated counts the Node of a NodeClaim that registered, by the NodeClaim's NodePool and zone labels.
func (m *Metrics) CountNodeCreated(nc *karpv1.NodeClaim) {
	m.NodesCreated.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[corev1.LabelTopologyZone]).Inc()
}

// CountNodeTerminated counts a Node whose termination finished, by its NodePool and zone labels.
func (m *Metrics) CountNodeTerminated(node *corev1.Node) {
	m.NodesTerminated.WithLabelValues(node.Labels[karpv1.NodePoolLabelKey], node.Labels[corev1.LabelTopologyZone]).Inc()
}

// StartSchedulingPass sets karpenter_scheduler_queue_depth for a new pass of controller over pods pending pods,
// under a scheduling_id of its own, and drops the series of the controller's earlier passes; the returned done sets
// the pass's depth to 0 as it ends (the series stays until the next pass, as Karpenter's does).
func (m *Metrics) StartSchedulingPass(controller string, pods int) (done func()) {
	id := string(uuid.NewUUID())
	m.SchedulerQueueDepth.DeletePartialMatch(prometheus.Labels{LabelController: controller})
	depth := m.SchedulerQueueDepth.WithLabelValues(controller, id)
	depth.Set(float64(pods))
	return func() { depth.Set(0) }
}

// SetNodePoolCost sets karpenter_nodepools_cost_total of a NodePool: the sum of the hourly prices of the offerings
// its NodeClaims run on (instance type, capacity type and zone labels), priced from the instance types the cloud
// provider last returned for the NodePool (NodeOverlay prices included). A NodeClaim not launched yet, or whose
// offering is not among those, adds nothing.
func (m *Metrics) SetNodePoolCost(nodePool string, claims []karpv1.NodeClaim) {
	var cost float64
	for i := range claims {
		l := claims[i].Labels
		if price, ok := m.InstanceTypeOfferingPrice.Price(nodePool, l[corev1.LabelInstanceTypeStable], l[karpv1.CapacityTypeLabelKey], l[corev1.LabelTopologyZone]); ok {
			cost += price
		}
	}
	m.NodePoolCost.WithLabelValues(nodePool).Set(cost)
}
