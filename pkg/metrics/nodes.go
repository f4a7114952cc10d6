package metrics

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// NodeLabelKeys are the node labels copied onto the per-node series (karpenter_nodes_allocatable,
// karpenter_nodes_total_*, karpenter_nodes_system_overhead, karpenter_nodes_current_lifetime_seconds): the
// well-known labels of Karpenter v1.14 with its AWS provider, in this order. Each is a label named after the key's
// name part, lower case, dashes as underscores (NodeLabelName).
var NodeLabelKeys = []string{
	karpv1.NodePoolLabelKey, karpv1.CapacityTypeLabelKey,
	corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelInstanceTypeStable, corev1.LabelArchStable,
	corev1.LabelOSStable, corev1.LabelWindowsBuild, awsv1.LabelTopologyZoneID,
	awsv1.LabelInstanceHypervisor, awsv1.LabelInstanceEncryptionInTransitSupported, awsv1.LabelInstanceCategory,
	awsv1.LabelInstanceFamily, awsv1.LabelInstanceGeneration, awsv1.LabelInstanceLocalNVME, awsv1.LabelInstanceSize,
	awsv1.LabelInstanceCPU, awsv1.LabelInstanceCPUManufacturer, awsv1.LabelInstanceCPUSustainedClockSpeedMhz,
	awsv1.LabelInstanceMemory, awsv1.LabelInstanceEBSBandwidth, awsv1.LabelInstanceNetworkBandwidth,
	awsv1.LabelInstanceGPUName, awsv1.LabelInstanceGPUManufacturer, awsv1.LabelInstanceGPUCount,
	awsv1.LabelInstanceGPUMemory, awsv1.LabelInstanceAcceleratorName, awsv1.LabelInstanceAcceleratorManufacturer,
	awsv1.LabelInstanceAcceleratorCount, awsv1.LabelInstanceCapabilityFlex, awsv1.LabelInstanceTenancy,
	awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible,
	awsv1.LabelPlacementGroupID, awsv1.LabelPlacementGroupPartition,
}

// Labels of the per-node series besides the node's labels.
const (
	LabelPhase   = "phase"
	LabelManaged = "managed"
)

// NodeLabelName is the metric label name of a node label key: its name part, lower case, "-" as "_".
func NodeLabelName(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		key = key[i+1:]
	}
	return strings.ReplaceAll(strings.ToLower(key), "-", "_")
}

// nodeLabelNames are the label names of the per-node series without resource_type: the node labels, node_name,
// phase and managed.
func nodeLabelNames() []string {
	names := make([]string, 0, len(NodeLabelKeys)+3)
	for _, k := range NodeLabelKeys {
		names = append(names, NodeLabelName(k))
	}
	return append(names, LabelNodeName, LabelPhase, LabelManaged)
}

// NodeEntry is one Node's entry in the per-node series: its label values and resource figures. ResourceValue
// names are resource names as the Node spells them ("cpu", "nvidia.com/gpu"); CPU in cores.
type NodeEntry struct {
	// Labels are the values of the node's labels, in NodeLabelKeys order, then node_name, phase and managed
	// (NodeLabelValues builds them).
	Labels                                        []string
	Created                                       time.Time
	Allocatable, Overhead, PodRequests, PodLimits []ResourceValue
	DaemonRequests, DaemonLimits                  []ResourceValue
}

// NodeLabelValues returns the label values of a Node's series: its NodeLabelKeys labels (empty when unset),
// its name, phase and whether a NodePool manages it.
func NodeLabelValues(node *corev1.Node) []string {
	values := make([]string, 0, len(NodeLabelKeys)+3)
	for _, k := range NodeLabelKeys {
		values = append(values, node.Labels[k])
	}
	managed := "false"
	if node.Labels[karpv1.NodePoolLabelKey] != "" {
		managed = "true"
	}
	return append(values, node.Name, string(node.Status.Phase), managed)
}

// Nodes is the per-node collector: karpenter_nodes_allocatable, _total_pod_requests, _total_pod_limits,
// _total_daemon_requests, _total_daemon_limits, _system_overhead, _current_lifetime_seconds, and the cluster-wide
// karpenter_cluster_utilization_percent and karpenter_cluster_state_node_count. It holds one NodeEntry a node and,
// built when the node is recorded or its labels change, the node's label pairs in the order of the exposition; it
// makes the series from them when Prometheus scrapes, so a scrape of 2,000 nodes neither builds nor sorts some
// 50,000 × 40 label pairs.
type Nodes struct {
	allocatable, podRequests, podLimits, daemonRequests, daemonLimits, overhead, lifetime *prometheus.Desc
	utilization, nodeCount                                                                *prometheus.Desc
	// lifetimeLayout orders the labels of the lifetime series, resourceLayout those of the resource series.
	lifetimeLayout, resourceLayout pairLayout
	now                            func() time.Time
	mu                             sync.Mutex
	nodes                          []NodeEntry
	// series are the label pairs of nodes[i], and byName the same by node name.
	series []*nodeSeries
	byName map[string]*nodeSeries
}

// nodeSeries are a node's label pairs: one a label in the Desc's order (the entry's values), those of its
// lifetime series in name order, and for each resource type those of its resource series.
type nodeSeries struct {
	values    []string
	pairs     []dto.LabelPair
	byIndex   []*dto.LabelPair
	lifetime  []*dto.LabelPair
	resources []resourcePairs
}

// resourcePairs are the label pairs of a node's series of one resource (name as the Node spells it).
type resourcePairs struct {
	name   string
	labels []*dto.LabelPair
}

// NewNodes returns the collector, empty; now is the clock of the lifetime gauge.
func NewNodes(now func() time.Time) *Nodes {
	names := nodeLabelNames()
	withType := append(names[:len(names):len(names)], LabelResourceType)
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Nodes{
		allocatable:    d("karpenter_nodes_allocatable", helpOf("karpenter_nodes_allocatable"), withType),
		podRequests:    d("karpenter_nodes_total_pod_requests", helpOf("karpenter_nodes_total_pod_requests"), withType),
		podLimits:      d("karpenter_nodes_total_pod_limits", helpOf("karpenter_nodes_total_pod_limits"), withType),
		daemonRequests: d("karpenter_nodes_total_daemon_requests", helpOf("karpenter_nodes_total_daemon_requests"), withType),
		daemonLimits:   d("karpenter_nodes_total_daemon_limits", helpOf("karpenter_nodes_total_daemon_limits"), withType),
		overhead:       d("karpenter_nodes_system_overhead", helpOf("karpenter_nodes_system_overhead"), withType),
		lifetime:       d("karpenter_nodes_current_lifetime_seconds", helpOf("karpenter_nodes_current_lifetime_seconds"), names),
		utilization:    d("karpenter_cluster_utilization_percent", helpOf("karpenter_cluster_utilization_percent"), []string{LabelResourceType}),
		nodeCount:      d("karpenter_cluster_state_node_count", helpOf("karpenter_cluster_state_node_count"), nil),
		lifetimeLayout: newLayout(names),
		resourceLayout: newLayout(withType),
		now:            now,
		byName:         map[string]*nodeSeries{},
	}
}

// Replace sets the nodes, replacing those before. The collector keeps the slice: the caller must not change it.
// The label pairs of a node whose label values are those it had are kept; the others are built.
func (n *Nodes) Replace(nodes []NodeEntry) {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Labels[len(NodeLabelKeys)] < nodes[j].Labels[len(NodeLabelKeys)] })
	n.mu.Lock()
	old := n.byName
	n.mu.Unlock()
	series := make([]*nodeSeries, len(nodes))
	byName := make(map[string]*nodeSeries, len(nodes))
	for i := range nodes {
		e := &nodes[i]
		s := old[e.Labels[len(NodeLabelKeys)]]
		if s == nil || !slices.Equal(s.values, e.Labels) {
			s = n.newSeries(e.Labels)
		}
		s = s.withResources(&n.resourceLayout, e)
		series[i] = s
		byName[e.Labels[len(NodeLabelKeys)]] = s
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes, n.series, n.byName = nodes, series, byName
}

// newSeries builds the label pairs of a node's lifetime series from its label values.
func (n *Nodes) newSeries(values []string) *nodeSeries {
	k := len(values)
	s := &nodeSeries{values: values, pairs: make([]dto.LabelPair, k), byIndex: make([]*dto.LabelPair, k+1)}
	n.lifetimeLayout.set(s.pairs, 0, values)
	for i := range s.pairs {
		s.byIndex[i] = &s.pairs[i]
	}
	s.lifetime = n.lifetimeLayout.sorted(make([]*dto.LabelPair, k), s.byIndex[:k])
	return s
}

// withResources returns s with the label pairs of the resources of e it has none for yet: s itself when it has
// them all, else a copy (a scrape may be reading s). A node keeps the pairs of a resource it no longer reports
// until its labels change: a few pairs, not series.
func (s *nodeSeries) withResources(l *pairLayout, e *NodeEntry) *nodeSeries {
	out := s
	for _, rs := range [][]ResourceValue{e.Allocatable, e.PodRequests, e.PodLimits, e.DaemonRequests, e.DaemonLimits, e.Overhead} {
		for _, r := range rs {
			if out.resourcePairs(r.Name) != nil {
				continue
			}
			if out == s {
				c := *s
				c.resources = slices.Clone(s.resources)
				out = &c
			}
			out.addResource(l, r.Name)
		}
	}
	return out
}

// addResource builds the label pairs of the series of resource name (as the Node spells it).
func (s *nodeSeries) addResource(l *pairLayout, name string) {
	pair := make([]dto.LabelPair, 1)
	l.set(pair, len(s.values), []string{ResourceLabel(name)})
	byIndex := slices.Clone(s.byIndex)
	byIndex[len(s.values)] = &pair[0]
	s.resources = append(s.resources, resourcePairs{name: name, labels: l.sorted(make([]*dto.LabelPair, len(byIndex)), byIndex)})
}

// resourcePairs returns the label pairs of the node's series of resource name; nil when not built.
func (s *nodeSeries) resourcePairs(name string) []*dto.LabelPair {
	for i := range s.resources {
		if s.resources[i].name == name {
			return s.resources[i].labels
		}
	}
	return nil
}

// Describe implements prometheus.Collector.
func (n *Nodes) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{n.allocatable, n.podRequests, n.podLimits, n.daemonRequests, n.daemonLimits, n.overhead, n.lifetime, n.utilization, n.nodeCount} {
		ch <- d
	}
}

// ResourceLabel is the resource_type value of a resource name: lower case, "-" as "_" (nvidia.com/gpu stays).
func ResourceLabel(name string) string { return strings.ReplaceAll(strings.ToLower(name), "-", "_") }

// Collect implements prometheus.Collector.
func (n *Nodes) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	nodes, series := n.nodes, n.series
	n.mu.Unlock()
	now := n.now()
	count := len(nodes)
	for i := range nodes {
		e := &nodes[i]
		count += len(e.Allocatable) + len(e.PodRequests) + len(e.PodLimits) + len(e.DaemonRequests) + len(e.DaemonLimits) + len(e.Overhead)
	}
	out := make([]gaugeSeries, count)
	next := func(desc *prometheus.Desc, labels []*dto.LabelPair, value float64) {
		g := &out[0]
		out = out[1:]
		g.desc, g.labels, g.value = desc, labels, value
		ch <- g
	}
	allocatable, requested := map[string]float64{}, map[string]float64{}
	for i := range nodes {
		e, s := &nodes[i], series[i]
		next(n.lifetime, s.lifetime, now.Sub(e.Created).Seconds())
		for _, f := range []struct {
			desc *prometheus.Desc
			rs   []ResourceValue
		}{{n.allocatable, e.Allocatable}, {n.podRequests, e.PodRequests}, {n.podLimits, e.PodLimits},
			{n.daemonRequests, e.DaemonRequests}, {n.daemonLimits, e.DaemonLimits}, {n.overhead, e.Overhead}} {
			for _, r := range f.rs {
				next(f.desc, s.resourcePairs(r.Name), r.Value)
			}
		}
		for _, r := range e.Allocatable {
			allocatable[ResourceLabel(r.Name)] += r.Value
		}
		for _, r := range e.PodRequests {
			requested[ResourceLabel(r.Name)] += r.Value
		}
	}
	for name, total := range allocatable {
		if total == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(n.utilization, prometheus.GaugeValue, 100*requested[name]/total, name)
	}
	ch <- prometheus.MustNewConstMetric(n.nodeCount, prometheus.GaugeValue, float64(len(nodes)))
}

// ResourceValue is a resource name and its amount as a float (CPU in cores, memory in bytes).
type ResourceValue struct {
	Name  string
	Value float64
}
