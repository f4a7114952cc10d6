package metrics

import (
	"bufio"
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
// built when the node is recorded or its labels change, the node's labels as the text exposition writes them, so
// the metrics handler writes a scrape of 2,000 nodes (some 50,000 series of 40 labels) without building, sorting
// or escaping a label pair (WriteText). Collect makes the series for other gatherers.
type Nodes struct {
	allocatable, podRequests, podLimits, daemonRequests, daemonLimits, overhead, lifetime *prometheus.Desc
	utilization, nodeCount                                                                *prometheus.Desc
	// lifetimeLayout orders the labels of the lifetime series, resourceLayout those of the resource series.
	lifetimeLayout, resourceLayout pairLayout
	// before is how many labels of the resource series sort before resource_type.
	before int
	now    func() time.Time
	mu     sync.Mutex
	nodes  []NodeEntry
	// text are the labels of nodes[i] as the exposition writes them, the nodes in the exposition's order;
	// byName are the same by node name.
	text   []*nodeText
	byName map[string]*nodeText
}

// nodeText is a node's labels as the text exposition writes them: those that sort before resource_type (the
// first is arch, the node's name among them) and, each after a comma, those after it (zone, zone_id).
type nodeText struct {
	entry  *NodeEntry
	values []string
	before string
	after  string
}

// NewNodes returns the collector, empty; now is the clock of the lifetime gauge.
func NewNodes(now func() time.Time) *Nodes {
	names := nodeLabelNames()
	withType := append(names[:len(names):len(names)], LabelResourceType)
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	n := &Nodes{
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
		byName:         map[string]*nodeText{},
	}
	for _, j := range n.resourceLayout.order {
		if j == len(names) {
			break
		}
		n.before++
	}
	return n
}

// Replace sets the nodes, replacing those before. The collector keeps the slice: the caller must not change it.
// The text of a node whose label values are those it had is kept; the others' is built.
func (n *Nodes) Replace(nodes []NodeEntry) {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Labels[len(NodeLabelKeys)] < nodes[j].Labels[len(NodeLabelKeys)] })
	n.mu.Lock()
	old := n.byName
	n.mu.Unlock()
	text := make([]*nodeText, len(nodes))
	byName := make(map[string]*nodeText, len(nodes))
	for i := range nodes {
		e := &nodes[i]
		t := old[e.Labels[len(NodeLabelKeys)]]
		if t == nil || !slices.Equal(t.values, e.Labels) {
			t = n.newText(e.Labels)
		}
		c := *t
		c.entry = e
		text[i] = &c
		byName[e.Labels[len(NodeLabelKeys)]] = &c
	}
	// The exposition's order: by the label values in label name order (the node's name decides at the latest).
	slices.SortFunc(text, func(a, b *nodeText) int {
		for _, j := range n.lifetimeLayout.order {
			if c := strings.Compare(a.values[j], b.values[j]); c != 0 {
				return c
			}
		}
		return 0
	})
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes, n.text, n.byName = nodes, text, byName
}

// newText builds a node's labels as the text exposition writes them from its label values.
func (n *Nodes) newText(values []string) *nodeText {
	t := &nodeText{values: values}
	names, sorted := make([]string, len(values)), make([]string, len(values))
	for i, j := range n.lifetimeLayout.order {
		names[i], sorted[i] = n.lifetimeLayout.names[j], values[j]
	}
	t.before = escapeLabels(names[:n.before], sorted[:n.before])
	if n.before < len(names) {
		t.after = "," + escapeLabels(names[n.before:], sorted[n.before:])
	}
	return t
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
	n.CollectOthers(ch)
	n.mu.Lock()
	nodes := n.nodes
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
	// The label pairs of this scrape: a node's name its own, the other values shared by the nodes that have them.
	pool := newPairPool(&n.resourceLayout)
	k := len(n.lifetimeLayout.names)
	byIndex := make([]*dto.LabelPair, k+1)
	for i := range nodes {
		e := &nodes[i]
		for j := range e.Labels {
			if j == len(NodeLabelKeys) {
				byIndex[j] = pool.at(j, &e.Labels[j])
			} else {
				byIndex[j] = pool.shared(j, e.Labels[j])
			}
		}
		next(n.lifetime, n.lifetimeLayout.sorted(make([]*dto.LabelPair, k), byIndex[:k]), now.Sub(e.Created).Seconds())
		resources := map[string][]*dto.LabelPair{}
		for _, f := range n.resourceFamilies(e) {
			for _, r := range f.rs {
				labels := resources[r.Name]
				if labels == nil {
					byIndex[k] = pool.shared(k, ResourceLabel(r.Name))
					labels = n.resourceLayout.sorted(make([]*dto.LabelPair, k+1), byIndex)
					resources[r.Name] = labels
				}
				next(f.desc, labels, r.Value)
			}
		}
	}
}

// resourceFamily is one family of a node's resource series and the node's figures in it.
type resourceFamily struct {
	desc *prometheus.Desc
	name string
	rs   []ResourceValue
}

// resourceFamilies returns the resource families of e's series in name order.
func (n *Nodes) resourceFamilies(e *NodeEntry) [6]resourceFamily {
	return [6]resourceFamily{
		{n.allocatable, "karpenter_nodes_allocatable", e.Allocatable},
		{n.overhead, "karpenter_nodes_system_overhead", e.Overhead},
		{n.daemonLimits, "karpenter_nodes_total_daemon_limits", e.DaemonLimits},
		{n.daemonRequests, "karpenter_nodes_total_daemon_requests", e.DaemonRequests},
		{n.podLimits, "karpenter_nodes_total_pod_limits", e.PodLimits},
		{n.podRequests, "karpenter_nodes_total_pod_requests", e.PodRequests},
	}
}

// CollectOthers sends the series WriteText does not write: the cluster-wide utilization and node count.
func (n *Nodes) CollectOthers(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	nodes := n.nodes
	n.mu.Unlock()
	allocatable, requested := map[string]float64{}, map[string]float64{}
	for i := range nodes {
		e := &nodes[i]
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

// TextFamilies are the names of the families WriteText writes, in name order.
func (n *Nodes) TextFamilies() []string {
	return []string{"karpenter_nodes_allocatable", "karpenter_nodes_current_lifetime_seconds", "karpenter_nodes_system_overhead",
		"karpenter_nodes_total_daemon_limits", "karpenter_nodes_total_daemon_requests", "karpenter_nodes_total_pod_limits",
		"karpenter_nodes_total_pod_requests"}
}

// WriteText writes family (one of TextFamilies) as text exposition; nothing when it has no series.
func (n *Nodes) WriteText(w *bufio.Writer, family string) error {
	n.mu.Lock()
	text := n.text
	n.mu.Unlock()
	t := &textWriter{w: w}
	if family == "karpenter_nodes_current_lifetime_seconds" {
		if len(text) == 0 {
			return nil
		}
		now := n.now()
		t.header(family, helpOf(family))
		for _, x := range text {
			t.str(family)
			t.byte('{')
			t.str(x.before)
			t.str(x.after)
			t.byte('}')
			t.value(now.Sub(x.entry.Created).Seconds())
		}
		return t.err
	}
	type series struct {
		resource string
		value    float64
	}
	var node []series
	resources := map[string]string{}
	header := false
	for _, x := range text {
		var rs []ResourceValue
		for _, f := range n.resourceFamilies(x.entry) {
			if f.name == family {
				rs = f.rs
			}
		}
		if len(rs) == 0 {
			continue
		}
		if !header {
			t.header(family, helpOf(family))
			header = true
		}
		// The node's series of the family in resource_type order.
		node = node[:0]
		for _, r := range rs {
			label, ok := resources[r.Name]
			if !ok {
				label = ResourceLabel(r.Name)
				resources[r.Name] = label
			}
			node = append(node, series{label, r.Value})
		}
		slices.SortStableFunc(node, func(a, b series) int { return strings.Compare(a.resource, b.resource) })
		for _, r := range node {
			t.str(family)
			t.byte('{')
			t.str(x.before)
			t.label(',', LabelResourceType, r.resource)
			t.str(x.after)
			t.byte('}')
			t.value(r.value)
		}
	}
	return t.err
}

// ResourceValue is a resource name and its amount as a float (CPU in cores, memory in bytes).
type ResourceValue struct {
	Name  string
	Value float64
}
