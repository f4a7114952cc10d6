package metrics

import (
	"fmt"
	"reflect"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail/dovetail/pkg/version"
)

// Label names shared by several metrics.
const (
	LabelNodePool     = "nodepool"
	LabelReason       = "reason"
	LabelController   = "controller"
	LabelMethod       = "method"
	LabelProvider     = "provider"
	LabelError        = "error"
	LabelResourceType = "resource_type"
	// LabelCode is the HTTP status code of an eviction request.
	LabelCode = "code"
	// Labels of the status-condition metrics.
	LabelGroup           = "group"
	LabelKind            = "kind"
	LabelConditionType   = "type"
	LabelConditionStatus = "status"
	// LabelToStatus is the status a condition changed to, on the transition-time histograms (Karpenter v1.15).
	LabelToStatus = "to_status"
	// Labels of the disruption metrics.
	LabelCapacityType = "capacity_type"
	LabelDecision     = "decision"
	// LabelTerminateFirstReason says why a terminate-first decision could not launch the replacement first:
	// no-reserved-capacity, static-at-limit (Karpenter's values) or at-limit (Dovetail's).
	LabelTerminateFirstReason = "terminate_first_reason"
	LabelConsolidationType    = "consolidation_type"
	// Labels of karpenter_nodeclaims_unhealthy_disrupted_total.
	LabelCondition = "condition"
	LabelImageID   = "image_id"
	// LabelResult is how a node reboot ended, or the outcome of a pod-deletion-cost write.
	LabelResult = "result"
	// LabelPolicy is a NodePool's consolidationPolicy.
	LabelPolicy = "policy"
	// LabelMessageType is the kind of an interruption-queue message.
	LabelMessageType = "message_type"
	// Labels of karpenter_nodes_allocatable and karpenter_cloudprovider_instance_type_offering_price_estimate:
	// the node and the offering (instance type, capacity type, zone) it runs on.
	LabelNodeName     = "node_name"
	LabelInstanceType = "instance_type"
	LabelZone         = "zone"
	LabelArch         = "arch"
	// LabelService and LabelOperation name a cloud API call (AWS service ID such as "EC2", and operation).
	LabelService   = "service"
	LabelOperation = "operation"
	// LabelHolderKind is who holds a leader Lease Dovetail waits on: karpenter or older-dovetail.
	LabelHolderKind = "holder_kind"
	// LabelBatcher names a batcher of cloud provider requests (create_fleet).
	LabelBatcher = "batcher"
	// Labels of karpenter_build_info.
	LabelVersion   = "version"
	LabelGoVersion = "goversion"
	LabelGoArch    = "goarch"
	LabelCommit    = "commit"
	// LabelSchedulingID names one scheduling pass (a fresh UUID each pass).
	LabelSchedulingID = "scheduling_id"
	// LabelMinValuesRelaxed is "true" when a NodeClaim was created with its NodePool's minValues relaxed.
	LabelMinValuesRelaxed = "min_values_relaxed"
)

// Reasons for karpenter_nodeclaims_created_total.
const (
	ReasonProvisioned = "provisioned"
)

// terminationBuckets are powers of two from 1 s: a termination takes seconds to hours (a grace period).
var terminationBuckets = prometheus.ExponentialBuckets(1, 2, 12)

// lifetimeBuckets span a node's life from 15 minutes to 30 days.
var lifetimeBuckets = []float64{
	(15 * time.Minute).Seconds(), (30 * time.Minute).Seconds(), time.Hour.Seconds(), (2 * time.Hour).Seconds(),
	(4 * time.Hour).Seconds(), (8 * time.Hour).Seconds(), (12 * time.Hour).Seconds(), (24 * time.Hour).Seconds(),
	(48 * time.Hour).Seconds(), (7 * 24 * time.Hour).Seconds(), (14 * 24 * time.Hour).Seconds(), (30 * 24 * time.Hour).Seconds(),
}

// durationBuckets cover sub-second API calls up to the 15-minute registration timeout.
// karpenterDurationBuckets are Karpenter's duration buckets (5 ms to 10 min), for the metrics that share its name.
var karpenterDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
	0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150,
	300, 450, 600}

// rebootBuckets span a fast reboot (10 s) to past the 20-minute observation window, doubling.
var rebootBuckets = prometheus.ExponentialBuckets(10, 2, 8)

var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 900}

// Metrics holds every metric Dovetail records. Build it once with New and share it; it is safe for concurrent use.
type Metrics struct {
	NodeClaimsCreated    *prometheus.CounterVec
	NodeClaimsTerminated *prometheus.CounterVec
	NodesCreated         *prometheus.CounterVec
	NodesTerminated      *prometheus.CounterVec
	// NodesTerminationDuration is observed by the node termination controller.
	NodesTerminationDuration *prometheus.SummaryVec
	SchedulingDuration       *prometheus.HistogramVec
	// SchedulingCPU is the CPU time of the thread that ran each provisioning pass's solve.
	SchedulingCPU       prometheus.Histogram
	SchedulerQueueDepth *prometheus.GaugeVec
	// PodsUnschedulable counts, after each provisioning pass, the pending pods it could place nowhere, by reason.
	PodsUnschedulable   *prometheus.GaugeVec
	PodsStartupDuration prometheus.Summary
	// NodeClaimLaunchDuration is from NodeClaim creation to Launched.
	NodeClaimLaunchDuration *prometheus.HistogramVec
	// NodeClaimRegistrationDuration is from NodeClaim creation to Registered.
	NodeClaimRegistrationDuration *prometheus.HistogramVec
	// NodeClaimInitializationDuration is from NodeClaim creation to Initialized.
	NodeClaimInitializationDuration *prometheus.HistogramVec
	CloudProviderDuration           *prometheus.HistogramVec
	CloudProviderErrors             *prometheus.CounterVec
	// CloudProviderThrottledCalls counts cloud API call attempts answered with a throttling error, by service
	// and operation (each retry counts).
	CloudProviderThrottledCalls *prometheus.CounterVec
	// APIWrites counts the controllers' API writes (sent, whatever the answer), by controller, verb and kind.
	APIWrites *prometheus.CounterVec
	// APIWriteConflicts counts the controllers' API writes refused with 409 Conflict (a stale resourceVersion), by
	// controller, verb and kind.
	APIWriteConflicts *prometheus.CounterVec
	// APIWriteInvalid counts the controllers' API writes refused with 422 Unprocessable Entity, by controller, verb
	// and kind.
	APIWriteInvalid *prometheus.CounterVec
	NodePoolUsage   *prometheus.GaugeVec
	NodePoolLimit   *prometheus.GaugeVec
	// NodePoolCost is the hourly price of a NodePool's NodeClaims; set it with SetNodePoolCost.
	NodePoolCost *prometheus.GaugeVec
	// CostTrackerErrors counts the launched NodeClaims SetNodePoolCost could not price.
	CostTrackerErrors *CostTracker
	// Nodes holds the per-node series (karpenter_nodes_allocatable, _total_*, _system_overhead,
	// _current_lifetime_seconds) and karpenter_cluster_utilization_percent, set by the node metrics controller.
	Nodes *Nodes
	// Pods holds karpenter_pods_state and the pods' unbound and unstarted ages, set by the pod metrics controller.
	Pods *Pods
	// PodsBoundDuration is from a pod's creation until it was bound, for pods seen unbound, by whether the pod asks
	// for dynamic resources.
	PodsBoundDuration *prometheus.HistogramVec
	// PodsProvisioningBoundDuration and PodsProvisioningStartupDuration are from when a provisioning pass first
	// found a pod a place until it was bound, and until it was ready (Pods.Times holds that moment).
	PodsProvisioningBoundDuration   *prometheus.HistogramVec
	PodsProvisioningStartupDuration prometheus.Histogram
	// ClusterStateSynced and ClusterStateUnsyncedTime say whether the controller's caches are synced.
	ClusterStateSynced       prometheus.Gauge
	ClusterStateUnsyncedTime prometheus.Gauge
	// PodsSchedulingDecisionDuration is, for each pending pod, the time from when the provisioner first saw it
	// until a provisioning pass first decided where it goes (or that it fits nowhere).
	PodsSchedulingDecisionDuration prometheus.Histogram
	// SchedulerIgnoredPods is, at the last provisioning pass, the pending pods it left out (pods asking for
	// dynamic resource allocation with IGNORE_DRA_REQUESTS=true).
	SchedulerIgnoredPods prometheus.Gauge
	// SchedulerPendingPodsByEffectiveZone is, at each provisioning pass, its pending pods by the zone their
	// constraints leave them (a zone name, flexible or none).
	SchedulerPendingPodsByEffectiveZone *prometheus.GaugeVec
	// SchedulerUnschedulablePods is, after each provisioning pass, the pods it could place nowhere.
	SchedulerUnschedulablePods *prometheus.GaugeVec
	// InstanceTypeOfferingPrice is the hourly price, in US dollars, of every offering the cloud provider last
	// returned for a NodePool, by instance type, capacity type and zone.
	InstanceTypeOfferingPrice *OfferingPrices
	// InstanceTypes are the CPU, memory and offering availability of the same instance types.
	InstanceTypes *InstanceTypeGauges
	// NodeClaimsTerminationDuration is from a NodeClaim's deletion request to the removal of its finalizer.
	NodeClaimsTerminationDuration *prometheus.HistogramVec
	// NodeClaimsInstanceTerminationDuration is from the InstanceTerminating condition to the instance being gone.
	NodeClaimsInstanceTerminationDuration *prometheus.HistogramVec
	// NodesDrained counts Nodes whose drain finished (every evictable pod gone).
	NodesDrained *prometheus.CounterVec
	// PodsDrained counts pods evicted while draining nodes, by the disruption reason of their node.
	PodsDrained *prometheus.CounterVec
	// PodsEvictionRequests counts eviction API calls by HTTP status code (200 for an accepted one).
	PodsEvictionRequests *prometheus.CounterVec
	// NodesLifetimeDuration is from a Node's creation to the removal of its termination finalizer.
	NodesLifetimeDuration *prometheus.HistogramVec
	// NodeClaimConditionDuration and NodeClaimConditionTransitions are the per-kind status-condition metrics;
	// ConditionDuration and ConditionTransitions the kind-labelled ones. Record them with
	// RecordNodeClaimConditions.
	NodeClaimConditionDuration    *prometheus.HistogramVec
	NodeClaimConditionTransitions *prometheus.CounterVec
	ConditionDuration             *prometheus.HistogramVec
	ConditionTransitions          *prometheus.CounterVec
	// NodeClaimsDisrupted counts NodeClaims deleted by a disruption (reason: expired, drifted, empty,
	// underutilized, interruption, unhealthy), by NodePool, capacity type, consolidation policy and termination
	// mode, and PodsDisruptionInitiated the pods of theirs that must run elsewhere; record both with
	// CountDisrupted.
	NodeClaimsDisrupted     *prometheus.CounterVec
	PodsDisruptionInitiated *prometheus.CounterVec
	// DeletionCostNodesPending is, after each pass of the pod deletion cost controller, how many nodes of each
	// NodePool had pods to write, and DeletionCostWrites counts its pod writes by outcome; record both with
	// RecordDeletionCostPass.
	DeletionCostNodesPending *prometheus.GaugeVec
	DeletionCostWrites       *prometheus.CounterVec
	// NodeClaimsUnhealthyDisrupted counts NodeClaims deleted by node repair, by the node condition that made the
	// node unhealthy (snake case, e.g. kernel_ready), NodePool, capacity type and image ID.
	NodeClaimsUnhealthyDisrupted *prometheus.CounterVec
	// NodeReboots counts the reboots node repair carried out to their end, by result (succeeded, provider_error,
	// recovery_timeout, invalid_request); NodeRebootDuration is the time from the request to that end, by result,
	// and NodeRebootRecovery the time from the RebootInstances call to the node's return (succeeded reboots only).
	NodeReboots        *prometheus.CounterVec
	NodeRebootDuration *prometheus.HistogramVec
	NodeRebootRecovery prometheus.Histogram
	// DisruptionDecisions counts the disruption controller's commands, by decision (delete, replace), reason
	// and consolidation type (empty, single, multi; "" for drift).
	DisruptionDecisions *prometheus.CounterVec
	// DisruptionDecisionsByNodePool counts the same commands once for each NodePool of their candidates.
	DisruptionDecisionsByNodePool *prometheus.CounterVec
	// TerminateFirstDecisions counts the terminate-first decisions (a node deleted before its replacement
	// exists), once for each NodePool of their candidates, by reason and why the replacement could not launch
	// first (LabelTerminateFirstReason).
	TerminateFirstDecisions *prometheus.CounterVec
	// DisruptionFailedValidations counts the candidates of commands the disruption controller decided but did not
	// start because the cluster had changed (their pods no longer fit, a replacement's NodePool was gone).
	DisruptionFailedValidations *prometheus.CounterVec
	// NodePoolNodesConsumingBudgets is, after each disruption pass, how many of a NodePool's nodes were being
	// disrupted or deleted (taking room in its budgets), by reason.
	NodePoolNodesConsumingBudgets *prometheus.GaugeVec
	// DisruptionEligibleNodes is, after each disruption pass, how many nodes a method could have disrupted.
	DisruptionEligibleNodes *prometheus.GaugeVec
	// DisruptionEvaluationDuration is the time a disruption method took to decide.
	DisruptionEvaluationDuration *prometheus.HistogramVec
	// DisruptionQueueFailures counts commands abandoned after they were started (a replacement that did not
	// initialize, a candidate that changed).
	DisruptionQueueFailures *prometheus.CounterVec
	// ConsolidationTimeouts counts consolidation searches that ran out of time.
	ConsolidationTimeouts *prometheus.CounterVec
	// NodePoolAllowedDisruptions is how many more nodes of a NodePool may be disrupted now, by reason.
	NodePoolAllowedDisruptions *prometheus.GaugeVec
	// DisruptionDecisionCPU is the CPU time of the thread that ran each disruption decision.
	DisruptionDecisionCPU prometheus.Histogram
	// DisruptionSavings is the hourly savings of the consolidation commands the last disruption pass decided.
	DisruptionSavings prometheus.Gauge
	// ConsolidationScore observes the Balanced scores of consolidation moves, by decision, NodePool and policy.
	ConsolidationScore *prometheus.HistogramVec
	// ConsolidationMoves counts consolidation moves, by decision (approved, rejected), NodePool and policy.
	ConsolidationMoves *prometheus.CounterVec
	// DisruptionEvictionsPerDollar is the last pass's evictions divided by its savings per hour (0 without savings).
	DisruptionEvictionsPerDollar prometheus.Gauge
	// DisruptionEvictions counts the pods the disruption commands started evict, by reason.
	DisruptionEvictions *prometheus.CounterVec
	// DisruptionSaved sums the hourly savings ($/h) of the consolidation commands started, by reason.
	DisruptionSaved *prometheus.CounterVec
	// DisruptionShortLived counts the nodes disruption deleted less than 2 minutes after their NodeClaim was
	// created, by reason and NodePool.
	DisruptionShortLived *prometheus.CounterVec
	// InterruptionReceivedMessages counts interruption-queue messages received, by message type.
	InterruptionReceivedMessages *prometheus.CounterVec
	// InterruptionDeletedMessages counts interruption-queue messages deleted after handling.
	InterruptionDeletedMessages prometheus.Counter
	// InterruptionMessageQueueDuration is how long a message waited in the queue before it was handled.
	InterruptionMessageQueueDuration prometheus.Histogram
	// InterruptionForeignMessages counts messages about instances no NodeClaim of this cluster owns (left in the
	// queue for the cluster sharing it), each counted once.
	InterruptionForeignMessages prometheus.Counter
	// ClusterNameConflicts is how many other clusters (distinct cluster-UID tags) the last identity check found
	// using this cluster's name in the account, through their instances or launch templates.
	ClusterNameConflicts prometheus.Gauge
	// LeaderElectionWaiting is, by the kind of holder (karpenter, older-dovetail), how many leader Leases held
	// by another autoscaler keep this replica from leading, at the last check.
	LeaderElectionWaiting *prometheus.GaugeVec
	// InstanceStatusUnhealthy is karpenter_interruption_instance_status_unhealthy_total (interruption.instancestatus).
	InstanceStatusUnhealthy *prometheus.CounterVec
	// ObjectConditions are the per-object condition and termination gauges of NodeClaims, NodePools, Nodes and
	// EC2NodeClasses, made at each scrape from the listers the operator sets.
	ObjectConditions *ObjectConditions
	// ObjectChanges are the condition transition (NodePools, Nodes, EC2NodeClasses) and termination duration
	// metrics of those kinds, recorded by RecordConditionChange and RecordTermination.
	ObjectChanges *ObjectChanges
	// BatcherBatchSize and BatcherBatchTime are the requests each batching window of the cloud provider
	// collected and how long it was open, by batcher; record them with ObserveBatch.
	BatcherBatchSize *prometheus.HistogramVec
	BatcherBatchTime *prometheus.HistogramVec
	// AWSRequests, AWSRequestDuration and AWSRequestRetries are recorded once per AWS operation,
	// AWSRequestAttempts and AWSRequestAttemptDuration once per HTTP attempt of it; record them with
	// ObserveAWSCall.
	AWSRequests               *prometheus.CounterVec
	AWSRequestDuration        *prometheus.HistogramVec
	AWSRequestRetries         *prometheus.HistogramVec
	AWSRequestAttempts        *prometheus.CounterVec
	AWSRequestAttemptDuration *prometheus.HistogramVec
	// ClientGoRequests and ClientGoRequestDuration are the API server requests of the controller's clients, by
	// answer and by resource; the operator forwards client-go's request metrics to CountKubeResult and
	// RecordKubeRequest.
	ClientGoRequests        *prometheus.CounterVec
	ClientGoRequestDuration *prometheus.HistogramVec
	// InstanceLaunchFailures counts the errors of CreateFleet answers (one per offering not launched), and
	// InstanceTerminationFailures the failed TerminateInstances calls; record them with CountLaunchFailure and
	// CountTerminationFailure.
	InstanceLaunchFailures      *prometheus.CounterVec
	InstanceTerminationFailures *prometheus.CounterVec
	// EC2NodeClassUserDataBytes is the user data size of the launch template last created for each EC2NodeClass;
	// record it with SetUserDataBytes and DeleteUserDataBytes.
	EC2NodeClassUserDataBytes *prometheus.GaugeVec
	// BuildInfo is 1, labelled with the binary's version, Go version, architecture and commit; New sets it.
	BuildInfo *prometheus.GaugeVec
}

// New builds the metrics and registers them with reg (the operator passes controller-runtime's
// metrics.Registry; tests pass a fresh prometheus.NewRegistry()).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		NodeClaimsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodeclaims_created_total",
			Help: "NodeClaims created, by reason, owning NodePool and whether minValues were relaxed for them.",
		}, []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed}),
		NodeClaimsTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodeclaims_terminated_total",
			Help: "NodeClaims whose termination finished, by owning NodePool, capacity type and zone.",
		}, []string{LabelNodePool, LabelCapacityType, LabelZone}),
		NodesCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodes_created_total",
			Help: "Nodes registered for a NodeClaim, by owning NodePool and zone.",
		}, []string{LabelNodePool, LabelZone}),
		NodesTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodes_terminated_total",
			Help: "Nodes whose termination finished, by owning NodePool and zone.",
		}, []string{LabelNodePool, LabelZone}),
		NodesTerminationDuration: prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name:       "karpenter_nodes_termination_duration_seconds",
			Help:       "Time from a Node's deletion request to the removal of its finalizer.",
			Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0},
		}, []string{LabelNodePool}),
		SchedulingDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_scheduler_scheduling_duration_seconds",
			Help:    "Duration of one scheduling pass over a batch of pending pods.",
			Buckets: durationBuckets,
		}, []string{LabelController}),
		SchedulingCPU: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dovetail_scheduler_scheduling_cpu_seconds", Help: helpOf("dovetail_scheduler_scheduling_cpu_seconds"),
			Buckets: durationBuckets,
		}),
		SchedulerQueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_scheduler_queue_depth",
			Help: "Pending pods in the scheduling pass under way, by controller and pass (scheduling_id).",
		}, []string{LabelController, LabelSchedulingID}),
		PodsUnschedulable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dovetail_provisioner_unschedulable_pods",
			Help: "Pending pods the last provisioning pass could place on no existing node and no new NodeClaim, by reason (the failing constraint).",
		}, []string{LabelReason}),
		PodsStartupDuration: prometheus.NewSummary(prometheus.SummaryOpts{
			Name:       "karpenter_pods_startup_duration_seconds",
			Help:       "Time from a pod's creation until it runs, for pods Dovetail provisioned capacity for.",
			Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0},
		}),
		NodeClaimLaunchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dovetail_nodeclaims_launch_duration_seconds",
			Help:    "Time from NodeClaim creation until its instance was launched.",
			Buckets: durationBuckets,
		}, []string{LabelNodePool}),
		NodeClaimRegistrationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dovetail_nodeclaims_registration_duration_seconds",
			Help:    "Time from NodeClaim creation until its Node registered.",
			Buckets: durationBuckets,
		}, []string{LabelNodePool}),
		NodeClaimInitializationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dovetail_nodeclaims_initialization_duration_seconds",
			Help:    "Time from NodeClaim creation until its Node was initialized.",
			Buckets: durationBuckets,
		}, []string{LabelNodePool}),
		CloudProviderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_cloudprovider_duration_seconds",
			Help:    "Duration of cloud provider calls, by controller, method and provider.",
			Buckets: durationBuckets,
		}, []string{LabelController, LabelMethod, LabelProvider}),
		CloudProviderErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_cloudprovider_errors_total",
			Help: "Errors returned by cloud provider calls, by controller, method, provider, error kind and the NodePool the call was about.",
		}, []string{LabelController, LabelMethod, LabelProvider, LabelError, LabelNodePool}),
		NodePoolUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_usage",
			Help: "Resources provisioned for a NodePool (sum of its NodeClaims' capacity), by resource type.",
		}, []string{LabelNodePool, LabelResourceType}),
		NodePoolLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_limit",
			Help: "Limits set on a NodePool, by resource type.",
		}, []string{LabelNodePool, LabelResourceType}),
		NodePoolCost: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_cost_total", Help: helpOf("karpenter_nodepools_cost_total"),
		}, []string{LabelNodePool}),
		Nodes: NewNodes(time.Now),
		Pods:  NewPods(time.Now),
		PodsBoundDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_pods_bound_duration_seconds",
			Help:    helpOf("karpenter_pods_bound_duration_seconds"),
			Buckets: karpenterDurationBuckets,
		}, []string{LabelDynamicResources}),
		PodsProvisioningBoundDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_pods_provisioning_bound_duration_seconds",
			Help:    helpOf("karpenter_pods_provisioning_bound_duration_seconds"),
			Buckets: karpenterDurationBuckets,
		}, []string{LabelDynamicResources}),
		PodsProvisioningStartupDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "karpenter_pods_provisioning_startup_duration_seconds",
			Help:    helpOf("karpenter_pods_provisioning_startup_duration_seconds"),
			Buckets: karpenterDurationBuckets,
		}),
		ClusterStateSynced: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "karpenter_cluster_state_synced", Help: helpOf("karpenter_cluster_state_synced"),
		}),
		ClusterStateUnsyncedTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "karpenter_cluster_state_unsynced_time_seconds", Help: helpOf("karpenter_cluster_state_unsynced_time_seconds"),
		}),
		PodsSchedulingDecisionDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "karpenter_pods_scheduling_decision_duration_seconds",
			Help:    helpOf("karpenter_pods_scheduling_decision_duration_seconds"),
			Buckets: karpenterDurationBuckets,
		}),
		SchedulerIgnoredPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "karpenter_scheduler_ignored_pods_count", Help: helpOf("karpenter_scheduler_ignored_pods_count"),
		}),
		SchedulerPendingPodsByEffectiveZone: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_scheduler_pending_pods_by_effective_zone_count", Help: helpOf("karpenter_scheduler_pending_pods_by_effective_zone_count"),
		}, []string{LabelController, LabelZone}),
		SchedulerUnschedulablePods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_scheduler_unschedulable_pods_count", Help: helpOf("karpenter_scheduler_unschedulable_pods_count"),
		}, []string{LabelController}),
		InstanceTypeOfferingPrice: NewOfferingPrices(),
		NodeClaimsTerminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_nodeclaims_termination_duration_seconds",
			Help:    "Time from a NodeClaim's deletion request to the removal of its finalizer, by owning NodePool.",
			Buckets: terminationBuckets,
		}, []string{LabelNodePool}),
		NodeClaimsInstanceTerminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_nodeclaims_instance_termination_duration_seconds",
			Help:    "Time from the request to terminate a NodeClaim's instance until the cloud no longer reports it, by owning NodePool.",
			Buckets: terminationBuckets[:11],
		}, []string{LabelNodePool}),
		NodesDrained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodes_drained_total",
			Help: "Nodes whose drain finished during termination, by owning NodePool.",
		}, []string{LabelNodePool}),
		PodsDrained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_pods_drained_total", Help: helpOf("karpenter_pods_drained_total"),
		}, []string{LabelReason}),
		PodsEvictionRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_pods_eviction_requests_total",
			Help: "Eviction API requests made while draining nodes, by HTTP response code.",
		}, []string{LabelCode}),
		NodesLifetimeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_nodes_lifetime_duration_seconds",
			Help:    "Time from a Node's creation to the end of its termination, by owning NodePool.",
			Buckets: lifetimeBuckets,
		}, []string{LabelNodePool}),
		NodeClaimConditionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "operator_nodeclaim_status_condition_transition_seconds",
			Help:    "Time a NodeClaim condition spent in a status before it changed, by condition type, the status it left and the one it changed to, and the NodeClaim's EC2NodeClass and NodePool labels.",
			Buckets: durationBuckets,
		}, append([]string{LabelConditionType, LabelConditionStatus, LabelToStatus}, KindNodeClaim.spec().extraLabels()...)),
		NodeClaimConditionTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_nodeclaim_status_condition_transitions_total",
			Help: "NodeClaim condition changes, by condition type and the status and reason it changed to, and the NodeClaim's EC2NodeClass and NodePool labels.",
		}, append([]string{LabelConditionType, LabelConditionStatus, LabelReason}, KindNodeClaim.spec().extraLabels()...)),
		ConditionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "operator_status_condition_transition_seconds",
			Help:    "Time a condition spent in a status before it changed, by object group and kind, condition type, the status it left and the one it changed to.",
			Buckets: durationBuckets,
		}, []string{LabelGroup, LabelKind, LabelConditionType, LabelConditionStatus, LabelToStatus}),
		ConditionTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_status_condition_transitions_total",
			Help: "Condition changes, by object group and kind, condition type and the status and reason it changed to.",
		}, []string{LabelGroup, LabelKind, LabelConditionType, LabelConditionStatus, LabelReason}),
		NodeClaimsUnhealthyDisrupted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodeclaims_unhealthy_disrupted_total",
			Help: "NodeClaims deleted by node repair, by the node condition that made the node unhealthy, owning NodePool, capacity type and image ID.",
		}, []string{LabelCondition, LabelNodePool, LabelCapacityType, LabelImageID}),
		NodeReboots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_nodes_reboots_total",
			Help: "Node reboots carried out by node repair, by result (succeeded, provider_error, recovery_timeout, invalid_request).",
		}, []string{LabelResult}),
		NodeRebootDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_nodes_reboot_duration_seconds",
			Help:    "Time from a node reboot's request to its end, by result.",
			Buckets: rebootBuckets,
		}, []string{LabelResult}),
		NodeRebootRecovery: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "karpenter_nodes_reboot_recovery_duration_seconds",
			Help:    "Time from the reboot call to the node's return (a new boot ID, Ready), for reboots that succeeded.",
			Buckets: rebootBuckets,
		}),
		DisruptionDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_voluntary_disruption_decisions_total",
			Help: "Voluntary disruption commands started, by decision (delete, replace), reason and consolidation type.",
		}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		DisruptionDecisionsByNodePool: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_voluntary_disruption_decisions_by_nodepool_total",
			Help: helpOf("karpenter_voluntary_disruption_decisions_by_nodepool_total"),
		}, []string{LabelDecision, LabelReason, LabelConsolidationType, LabelNodePool}),
		TerminateFirstDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_voluntary_disruption_terminate_first_decisions_total",
			Help: helpOf("karpenter_voluntary_disruption_terminate_first_decisions_total"),
		}, []string{LabelNodePool, LabelReason, LabelTerminateFirstReason}),
		DisruptionFailedValidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_voluntary_disruption_failed_validations_total",
			Help: helpOf("karpenter_voluntary_disruption_failed_validations_total"),
		}, []string{LabelConsolidationType}),
		NodePoolNodesConsumingBudgets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_nodes_consuming_budgets",
			Help: helpOf("karpenter_nodepools_nodes_consuming_budgets"),
		}, []string{LabelNodePool, LabelReason}),
		DisruptionEligibleNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_voluntary_disruption_eligible_nodes",
			Help: "Nodes a voluntary disruption method could disrupt at its last evaluation, by reason.",
		}, []string{LabelReason}),
		DisruptionEvaluationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
			Help:    "Time a voluntary disruption pass took to decide, by the reason of the command it chose and consolidation type.",
			Buckets: durationBuckets,
		}, []string{LabelReason, LabelConsolidationType}),
		DisruptionQueueFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_voluntary_disruption_queue_failures_total",
			Help: "Voluntary disruption commands abandoned after they started, by decision, reason and consolidation type.",
		}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		ConsolidationTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_voluntary_disruption_consolidation_timeouts_total",
			Help: "Consolidation searches that ran out of time, by consolidation type.",
		}, []string{LabelConsolidationType}),
		NodePoolAllowedDisruptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_allowed_disruptions",
			Help: "How many more nodes of a NodePool may be disrupted now, by NodePool and reason.",
		}, []string{LabelNodePool, LabelReason}),
		DisruptionDecisionCPU: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dovetail_disruption_decision_cpu_seconds", Help: helpOf("dovetail_disruption_decision_cpu_seconds"),
			Buckets: durationBuckets,
		}),
		DisruptionSavings: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dovetail_disruption_savings_dollars_per_hour",
			Help: "Hourly savings of the consolidation commands the last disruption pass decided (drift not counted).",
		}),
		ConsolidationScore: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "karpenter_consolidation_score",
			Help:    "Scores of consolidation moves in NodePools with consolidationPolicy Balanced, by decision, NodePool and policy.",
			Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1, 2, 5, 10},
		}, []string{LabelDecision, LabelNodePool, LabelPolicy}),
		ConsolidationMoves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_consolidation_moves_total",
			Help: "Consolidation moves decided, by decision (approved, rejected), NodePool and policy.",
		}, []string{LabelDecision, LabelNodePool, LabelPolicy}),
		DisruptionEvictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_disruption_evictions_total", Help: helpOf("dovetail_disruption_evictions_total"),
		}, []string{LabelReason}),
		DisruptionSaved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_disruption_saved_dollars_per_hour_total", Help: helpOf("dovetail_disruption_saved_dollars_per_hour_total"),
		}, []string{LabelReason}),
		DisruptionShortLived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_disruption_short_lived_nodes_total", Help: helpOf("dovetail_disruption_short_lived_nodes_total"),
		}, []string{LabelReason, LabelNodePool}),
		DisruptionEvictionsPerDollar: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dovetail_disruption_evictions_per_dollar",
			Help: "Pods the last disruption pass's commands evict per dollar per hour they save (0 when they save nothing).",
		}),
		InterruptionReceivedMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_interruption_received_messages_total",
			Help: "Interruption-queue messages received, by message type.",
		}, []string{LabelMessageType}),
		InterruptionDeletedMessages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "karpenter_interruption_deleted_messages_total",
			Help: "Interruption-queue messages deleted after they were handled.",
		}),
		InterruptionMessageQueueDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "karpenter_interruption_message_queue_duration_seconds",
			Help:    "How long interruption messages waited in the queue before they were handled.",
			Buckets: durationBuckets,
		}),
		CloudProviderThrottledCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_cloudprovider_throttled_calls_total",
			Help: "Cloud API call attempts answered with a throttling error, by service and operation; each retry counts.",
		}, []string{LabelService, LabelOperation}),
		APIWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_api_writes_total", Help: helpOf("dovetail_api_writes_total"),
		}, []string{LabelController, LabelVerb, LabelKind}),
		APIWriteConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_api_write_conflicts_total", Help: helpOf("dovetail_api_write_conflicts_total"),
		}, []string{LabelController, LabelVerb, LabelKind}),
		APIWriteInvalid: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dovetail_api_write_invalid_total", Help: helpOf("dovetail_api_write_invalid_total"),
		}, []string{LabelController, LabelVerb, LabelKind}),
		InterruptionForeignMessages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dovetail_interruption_foreign_messages_total",
			Help: "Interruption-queue messages about instances this cluster does not own, left in the queue; each counted once.",
		}),
		ClusterNameConflicts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dovetail_cluster_name_conflicts",
			Help: "Other clusters (distinct cluster-UID tags) whose instances or launch templates carry this cluster's name in the account, at the last check; 0 when the name is this cluster's alone.",
		}),
		LeaderElectionWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dovetail_leader_election_waiting",
			Help: "Leader Leases held and renewed by another autoscaler (holder_kind karpenter or older-dovetail) that keep this replica from leading, at the last check; 0 when none.",
		}, []string{LabelHolderKind}),
		ObjectConditions: NewObjectConditions(time.Now),
		ObjectChanges:    NewObjectChanges(),
		BatcherBatchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "karpenter_cloudprovider_batcher_batch_size", Help: helpOf("karpenter_cloudprovider_batcher_batch_size"),
			Buckets: []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200, 225, 250,
				275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000},
		}, []string{LabelBatcher}),
		BatcherBatchTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "karpenter_cloudprovider_batcher_batch_time_seconds", Help: helpOf("karpenter_cloudprovider_batcher_batch_time_seconds"),
			Buckets: karpenterDurationBuckets,
		}, []string{LabelBatcher}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_build_info", Help: helpOf("karpenter_build_info"),
		}, []string{LabelVersion, LabelGoVersion, LabelGoArch, LabelCommit}),
	}
	m.InstanceStatusUnhealthy = newInstanceStatusUnhealthy()
	m.CostTrackerErrors = newCostTracker()
	newAWSSDKMetrics(m)
	newClientGoMetrics(m)
	newInstanceFailureMetrics(m)
	newDisruptedMetrics(m)
	newDeletionCostMetrics(m)
	m.InstanceTypes = NewInstanceTypeGauges(m.InstanceTypeOfferingPrice)
	m.BuildInfo.WithLabelValues(version.Version(), runtime.Version(), runtime.GOARCH, version.Commit()).Set(1)
	if err := m.register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// ObserveBatch records one closed batching window of the cloud provider: the requests it collected and how long
// it was open.
func (m *Metrics) ObserveBatch(batcher string, size int, open time.Duration) {
	m.BatcherBatchSize.WithLabelValues(batcher).Observe(float64(size))
	m.BatcherBatchTime.WithLabelValues(batcher).Observe(open.Seconds())
}

// register registers every collector of m with reg. Each controller run has a registry of its own, so a name
// registered twice is a programming error.
func (m *Metrics) register(reg prometheus.Registerer) error {
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering metric %s: %w", v.Type().Field(i).Name, err)
		}
	}
	return nil
}

// NewForTest builds metrics on a private registry, for tests that do not inspect them.
func NewForTest() *Metrics {
	m, err := New(prometheus.NewRegistry())
	if err != nil {
		// A fresh registry cannot hold a duplicate: this is a programming error in New.
		panic(err)
	}
	return m
}
