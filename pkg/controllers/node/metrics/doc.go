// Package metrics keeps the per-node series (karpenter_nodes_allocatable, karpenter_nodes_total_*,
// karpenter_nodes_system_overhead, karpenter_nodes_current_lifetime_seconds), the cluster's utilization and the
// cluster-state gauges: every Interval it sums the cached pods of each cached Node into one small entry a node.
package metrics
