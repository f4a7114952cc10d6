package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// AllocatableNode is one registered node's entry in karpenter_nodes_allocatable: the labels of its series and a
// value for each allocatable resource.
type AllocatableNode struct {
	Node, InstanceType, CapacityType, Zone, Arch string
	Resources                                    []ResourceValue
}

// ResourceValue is a resource name and its amount as a float.
type ResourceValue struct {
	Name  string
	Value float64
}

// NodeAllocatable is karpenter_nodes_allocatable. It keeps, for each NodePool, a short entry a node (label
// values and floats) and makes the series when Prometheus scrapes: a gauge vector held a series object with its
// seven label pairs for each node and resource (4 MB at 1,000 nodes, a tenth of the controller's live heap) and
// the counter kept the joined label values of each besides.
type NodeAllocatable struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// pools holds, by NodePool name, the nodes last recorded for it.
	pools map[string][]AllocatableNode
}

// NewNodeAllocatable returns the collector, empty.
func NewNodeAllocatable() *NodeAllocatable {
	return &NodeAllocatable{
		desc: prometheus.NewDesc("karpenter_nodes_allocatable",
			"Allocatable resources of each node Dovetail launched, by node, NodePool, resource type, instance type, capacity type, zone and architecture.",
			[]string{LabelNodeName, LabelNodePool, LabelResourceType, LabelInstanceType, LabelCapacityType, LabelZone, LabelArch}, nil),
		pools: map[string][]AllocatableNode{},
	}
}

// Record replaces the NodePool's nodes with these; an empty list forgets the NodePool. Entries with the same
// labels (two NodeClaims naming one node) are kept once, the last one, as a gauge set twice would be: a
// registry refuses a scrape that has a series twice. The collector keeps the slice: the caller must not change
// it afterwards.
func (n *NodeAllocatable) Record(nodePool string, nodes []AllocatableNode) {
	type labels struct{ node, instanceType, capacityType, zone, arch string }
	at := make(map[labels]int, len(nodes))
	kept := nodes[:0]
	for _, node := range nodes {
		l := labels{node.Node, node.InstanceType, node.CapacityType, node.Zone, node.Arch}
		if i, ok := at[l]; ok {
			kept[i] = node
			continue
		}
		at[l] = len(kept)
		kept = append(kept, node)
	}
	nodes = kept
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(nodes) == 0 {
		delete(n.pools, nodePool)
		return
	}
	n.pools[nodePool] = nodes
}

// Describe implements prometheus.Collector.
func (n *NodeAllocatable) Describe(ch chan<- *prometheus.Desc) { ch <- n.desc }

// Collect implements prometheus.Collector: one series a node and resource, NodePools in name order.
func (n *NodeAllocatable) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	pools := make([]string, 0, len(n.pools))
	for name := range n.pools {
		pools = append(pools, name)
	}
	sort.Strings(pools)
	lists := make([][]AllocatableNode, len(pools))
	for i, name := range pools {
		lists[i] = n.pools[name]
	}
	n.mu.Unlock()
	for i, pool := range pools {
		for _, node := range lists[i] {
			for _, r := range node.Resources {
				ch <- prometheus.MustNewConstMetric(n.desc, prometheus.GaugeValue, r.Value,
					node.Node, pool, r.Name, node.InstanceType, node.CapacityType, node.Zone, node.Arch)
			}
		}
	}
}
