package metrics

import (
	"sync"

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
// provider last returned for the NodePool (NodeOverlay prices included). A NodeClaim not launched yet adds nothing;
// a launched one whose offering is not among those adds nothing and is counted once in
// karpenter_nodepools_cost_tracker_errors_total (again only if it was priced in between).
func (m *Metrics) SetNodePoolCost(nodePool string, claims []karpv1.NodeClaim) {
	var cost float64
	known := m.InstanceTypeOfferingPrice.Known(nodePool)
	var unpriced []string
	for i := range claims {
		l := claims[i].Labels
		instanceType, capacityType, zone := l[corev1.LabelInstanceTypeStable], l[karpv1.CapacityTypeLabelKey], l[corev1.LabelTopologyZone]
		if price, ok := m.InstanceTypeOfferingPrice.Price(nodePool, instanceType, capacityType, zone); ok {
			cost += price
		} else if known && instanceType != "" && capacityType != "" && zone != "" {
			unpriced = append(unpriced, claims[i].Name)
		}
	}
	m.NodePoolCost.WithLabelValues(nodePool).Set(cost)
	m.CostTrackerErrors.observe(nodePool, unpriced)
}

// ForgetNodePoolCost removes a deleted NodePool's cost series and what the cost tracker remembers of it.
func (m *Metrics) ForgetNodePoolCost(nodePool string) {
	m.NodePoolCost.DeleteLabelValues(nodePool)
	m.CostTrackerErrors.forget(nodePool)
}

// CostTracker is karpenter_nodepools_cost_tracker_errors_total: launched NodeClaims whose offering the NodePool
// cost could not price, each counted when it is first found unpriced. It remembers the unpriced NodeClaims of the
// last count of each NodePool.
type CostTracker struct {
	errors *prometheus.CounterVec
	mu     sync.Mutex
	// unpriced holds, by NodePool name, the names of the NodeClaims found unpriced at its last count.
	unpriced map[string]map[string]bool
}

func newCostTracker() *CostTracker {
	return &CostTracker{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodepools_cost_tracker_errors_total", Help: helpOf("karpenter_nodepools_cost_tracker_errors_total"),
		}, []string{LabelNodePool}),
		unpriced: map[string]map[string]bool{},
	}
}

// Errors is the number counted for a NodePool so far.
func (c *CostTracker) Errors(nodePool string) prometheus.Counter {
	return c.errors.WithLabelValues(nodePool)
}

func (c *CostTracker) observe(nodePool string, unpriced []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.unpriced[nodePool]
	now := make(map[string]bool, len(unpriced))
	for _, name := range unpriced {
		now[name] = true
		if !before[name] {
			c.errors.WithLabelValues(nodePool).Inc()
		}
	}
	if len(now) == 0 {
		delete(c.unpriced, nodePool)
		return
	}
	c.unpriced[nodePool] = now
}

func (c *CostTracker) forget(nodePool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unpriced, nodePool)
}

// Describe implements prometheus.Collector.
func (c *CostTracker) Describe(ch chan<- *prometheus.Desc) { c.errors.Describe(ch) }

// Collect implements prometheus.Collector.
func (c *CostTracker) Collect(ch chan<- prometheus.Metric) { c.errors.Collect(ch) }
