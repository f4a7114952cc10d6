package dashboards

// Query is one panel or alert expression of a Karpenter user's dashboards, written from Karpenter's
// documentation of its metrics (reference, troubleshooting, and the capacity and performance dashboards its
// getting-started guide describes).
type Query struct {
	// Name says what the panel or alert shows.
	Name string
	Expr string
}

// Queries are evaluated on the scrapes of test/e2e's TestKarpenterMetricsScraped; each must return data.
var Queries = []Query{
	// Capacity: nodes and what runs on them.
	{"nodes by nodepool", `count by (nodepool) (karpenter_nodes_allocatable{resource_type="cpu"})`},
	{"nodes by instance type, zone and capacity type", `count by (instance_type, zone, capacity_type) (karpenter_nodes_allocatable{resource_type="cpu"})`},
	{"spot share of nodes", `count(karpenter_nodes_allocatable{resource_type="cpu", capacity_type="spot"}) / count(karpenter_nodes_allocatable{resource_type="cpu"})`},
	{"allocatable cpu by nodepool", `sum by (nodepool) (karpenter_nodes_allocatable{resource_type="cpu"})`},
	{"allocatable memory by nodepool and arch", `sum by (nodepool, arch) (karpenter_nodes_allocatable{resource_type="memory"})`},
	{"cpu requested by pods, share of allocatable per node", `sum by (node_name) (karpenter_nodes_total_pod_requests{resource_type="cpu"}) / sum by (node_name) (karpenter_nodes_allocatable{resource_type="cpu"})`},
	{"memory requested by pods and daemons, share of allocatable per node", `(sum by (node_name) (karpenter_nodes_total_pod_requests{resource_type="memory"}) + sum by (node_name) (karpenter_nodes_total_daemon_requests{resource_type="memory"})) / sum by (node_name) (karpenter_nodes_allocatable{resource_type="memory"})`},
	{"cpu requested by daemons per instance type", `sum by (instance_type) (karpenter_nodes_total_daemon_requests{resource_type="cpu"})`},
	{"pod cpu limits per nodepool", `sum by (nodepool) (karpenter_nodes_total_pod_limits{resource_type="cpu"})`},
	{"daemon memory limits per node", `sum by (node_name) (karpenter_nodes_total_daemon_limits{resource_type="memory"})`},
	{"system overhead per node", `sum by (node_name, resource_type) (karpenter_nodes_system_overhead)`},
	{"oldest node age by nodepool", `max by (nodepool) (karpenter_nodes_current_lifetime_seconds)`},
	{"nodepool cpu usage against its limit", `karpenter_nodepools_usage{resource_type="cpu"} / karpenter_nodepools_limit{resource_type="cpu"}`},
	{"nodepool nodes", `sum by (nodepool) (karpenter_nodepools_usage{resource_type="nodes"})`},
	{"cluster utilisation", `karpenter_cluster_utilization_percent`},
	{"nodes cluster state tracks", `karpenter_cluster_state_node_count`},
	{"alert: cluster state not synced", `karpenter_cluster_state_synced == 1`},

	// Pods.
	{"pods by phase", `sum by (phase) (karpenter_pods_state)`},
	{"pods by nodepool and phase", `sum by (nodepool, phase) (karpenter_pods_state)`},
	{"pods by instance type and capacity type", `sum by (instance_type, capacity_type) (karpenter_pods_state)`},
	{"pod startup time p90", `max(karpenter_pods_startup_duration_seconds{quantile="0.9"})`},
	{"pod bound time p99", `histogram_quantile(0.99, sum by (le) (rate(karpenter_pods_bound_duration_seconds_bucket[10m])))`},
	{"scheduling pass p99", `histogram_quantile(0.99, sum by (le, controller) (rate(karpenter_scheduler_scheduling_duration_seconds_bucket[10m])))`},
	{"scheduler queue depth", `sum by (controller) (karpenter_scheduler_queue_depth)`},

	// NodeClaims and nodes over time.
	{"nodeclaims created by nodepool and reason", `sum by (nodepool, reason) (increase(karpenter_nodeclaims_created_total[10m]))`},
	{"nodeclaims terminated by nodepool and capacity type", `sum by (nodepool, capacity_type) (increase(karpenter_nodeclaims_terminated_total[10m]))`},
	{"nodes created rate", `sum by (nodepool) (rate(karpenter_nodes_created_total[5m]))`},
	{"nodes terminated rate", `sum by (nodepool) (rate(karpenter_nodes_terminated_total[5m]))`},
	{"node termination time p50", `max(karpenter_nodes_termination_duration_seconds{quantile="0.5"})`},
	{"nodeclaim termination time p90", `histogram_quantile(0.9, sum by (le, nodepool) (rate(karpenter_nodeclaims_termination_duration_seconds_bucket[10m])))`},
	{"instance termination time p90", `histogram_quantile(0.9, sum by (le) (rate(karpenter_nodeclaims_instance_termination_duration_seconds_bucket[10m])))`},
	{"node lifetime p50", `histogram_quantile(0.5, sum by (le, nodepool) (rate(karpenter_nodes_lifetime_duration_seconds_bucket[10m])))`},
	{"nodes drained", `sum by (nodepool) (increase(karpenter_nodes_drained_total[10m]))`},
	{"pods drained by reason", `sum by (reason) (increase(karpenter_pods_drained_total[10m]))`},
	{"eviction requests by response code", `sum by (code) (increase(karpenter_pods_eviction_requests_total[10m]))`},
	{"launch time p90 (Launched condition)", `histogram_quantile(0.9, sum by (le) (rate(operator_nodeclaim_status_condition_transition_seconds_bucket{type="Launched"}[10m])))`},
	{"registration time p90 (Registered condition)", `histogram_quantile(0.9, sum by (le) (rate(operator_nodeclaim_status_condition_transition_seconds_bucket{type="Registered"}[10m])))`},
	{"nodeclaim condition transitions", `sum by (type, status) (increase(operator_nodeclaim_status_condition_transitions_total[10m]))`},
	{"nodeclaims by condition", `sum by (type, status) (operator_nodeclaim_status_condition_count)`},
	{"alert: a nodeclaim condition in its status for long", `max by (type, status) (operator_nodeclaim_status_condition_current_status_seconds) >= 0`},
	{"alert: nodepool not ready", `operator_nodepool_status_condition_count{type="Ready"}`},
	{"alert: ec2nodeclass not ready", `operator_ec2nodeclass_status_condition_count{type="Ready"}`},
	{"deprecated condition count by kind", `sum by (kind, type) (operator_status_condition_count)`},

	// Disruption.
	{"nodeclaims disrupted by reason", `sum by (nodepool, reason) (increase(karpenter_nodeclaims_disrupted_total[10m]))`},
	{"disruption decisions", `sum by (decision, reason, consolidation_type) (increase(karpenter_voluntary_disruption_decisions_total[10m]))`},
	{"disruption decisions by nodepool", `sum by (nodepool, decision) (increase(karpenter_voluntary_disruption_decisions_by_nodepool_total[10m]))`},
	{"nodes eligible for disruption", `sum by (reason) (karpenter_voluntary_disruption_eligible_nodes)`},
	{"disruption evaluation p99", `histogram_quantile(0.99, sum by (le, method) (rate(karpenter_voluntary_disruption_decision_evaluation_duration_seconds_bucket[10m])))`},
	{"allowed disruptions by nodepool", `min by (nodepool, reason) (karpenter_nodepools_allowed_disruptions)`},
	{"nodes consuming disruption budgets", `sum by (nodepool) (karpenter_nodepools_nodes_consuming_budgets)`},

	// Interruption.
	{"interruption messages by type", `sum by (message_type) (increase(karpenter_interruption_received_messages_total[10m]))`},
	{"interruption messages deleted", `sum(rate(karpenter_interruption_deleted_messages_total[5m]))`},
	{"interruption queue latency p99", `histogram_quantile(0.99, sum by (le) (rate(karpenter_interruption_message_queue_duration_seconds_bucket[10m])))`},

	// Cloud provider.
	{"cloudprovider call duration p50 by method", `histogram_quantile(0.5, sum by (le, method) (rate(karpenter_cloudprovider_duration_seconds_bucket[10m])))`},
	{"cloudprovider call duration p99 by method", `histogram_quantile(0.99, sum by (le, method) (rate(karpenter_cloudprovider_duration_seconds_bucket[10m])))`},
	{"cloudprovider errors by method and error", `sum by (method, error) (increase(karpenter_cloudprovider_errors_total[10m]))`},
	{"instance launch failures by reason and zone", `sum by (reason, zone, capacity_type) (increase(karpenter_cloudprovider_instance_launch_failures_total[10m]))`},
	{"cheapest spot price by instance type", `min by (instance_type) (karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type="spot"})`},
	{"available offerings by instance type", `sum by (instance_type) (karpenter_cloudprovider_instance_type_offering_available)`},
	{"instance type vcpus", `max by (instance_type) (karpenter_cloudprovider_instance_type_cpu_cores)`},
	{"instance type memory", `max by (instance_type) (karpenter_cloudprovider_instance_type_memory_bytes)`},
	{"cloudprovider batch size p90", `histogram_quantile(0.9, sum by (le, batcher) (rate(karpenter_cloudprovider_batcher_batch_size_bucket[10m])))`},
	{"AWS API calls by service and action", `sum by (service, action) (rate(aws_sdk_go_request_total[5m]))`},

	// The controller itself.
	{"build", `karpenter_build_info`},
	{"reconciles by controller", `sum by (controller) (rate(controller_runtime_reconcile_total[10m]))`},
	{"reconcile time p99 by controller", `histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket[10m])))`},
	{"reconcile errors", `sum by (controller) (increase(controller_runtime_reconcile_errors_total[10m]))`},
	{"work queue depth", `sum by (name) (workqueue_depth)`},
	// leader_election_master_status is left out: the local stack runs without leader election.
	{"API server requests by code", `sum by (code) (rate(client_go_request_total[5m]))`},
}

// NotYet are the queries reading a metric Dovetail does not serve yet, by query name, with that metric: such a query
// must return nothing (so the entry is removed the day the metric arrives) instead of data.
var NotYet = map[string]string{}
