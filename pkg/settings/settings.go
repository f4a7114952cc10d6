package settings

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Preference policies: whether preferred pod affinities are honoured (relaxed one at a time) or ignored.
const (
	PreferencePolicyRespect = "Respect"
	PreferencePolicyIgnore  = "Ignore"
)

// MinValues policies: whether minValues on requirements must hold (Strict) or may be relaxed (BestEffort).
const (
	MinValuesPolicyStrict     = "Strict"
	MinValuesPolicyBestEffort = "BestEffort"
)

// Feature gate names accepted in FEATURE_GATES.
const (
	FeatureSpotToSpotConsolidation = "SpotToSpotConsolidation"
	FeatureNodeRepair              = "NodeRepair"
	FeatureReservedCapacity        = "ReservedCapacity"
	FeatureNodeOverlay             = "NodeOverlay"
	FeatureStaticCapacity          = "StaticCapacity"
	FeatureCapacityBuffer          = "CapacityBuffer"
	// Karpenter v1.15's gates; Dovetail accepts them off.
	FeatureTerminateFirstDrift       = "TerminateFirstDrift"
	FeatureTerminateFirstRepair      = "TerminateFirstRepair"
	FeaturePodDeletionCostManagement = "PodDeletionCostManagement"
)

// Gate names accepted in AWS_FEATURE_GATES (Karpenter v1.15's AWS provider); Dovetail accepts them off.
const (
	AWSFeatureNodeClassCEL    = "NodeClassCEL"
	AWSFeatureDRANVIDIAGPU    = "DRANVIDIAGPU"
	AWSFeatureDRAEFA          = "DRAEFA"
	AWSFeatureRebootForRepair = "RebootForRepair"
)

// DefaultLeaderElectionName is Karpenter's name of the leader-election Lease (LEADER_ELECTION_NAME).
const DefaultLeaderElectionName = "karpenter-leader-election"

// Settings are the controller's settings. The zero value is not valid: use Parse.
type Settings struct {
	// ClusterName names the cluster; it tags and discovers every AWS resource. Required.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join; empty means discover it with EKS DescribeCluster.
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM CA nodes trust; empty means take it from the controller's own config.
	ClusterCABundle string
	// InterruptionQueue is the SQS queue name for interruption events; empty turns interruption handling off.
	InterruptionQueue string
	// IsolatedVPC says the VPC has no internet access, so public AWS endpoints (e.g. Pricing) are not called.
	IsolatedVPC bool
	// VMMemoryOverheadPercent is the share of an instance type's memory held back for the hypervisor/OS.
	VMMemoryOverheadPercent float64
	// ReservedENIs is the number of ENIs left out of the max-pods computation.
	ReservedENIs int
	// BatchIdleDuration closes a provisioning batch when no new pending pod arrived for this long.
	BatchIdleDuration time.Duration
	// BatchMaxDuration closes a provisioning batch at this age at the latest.
	BatchMaxDuration time.Duration
	// RegistrationTimeout is how long a launched NodeClaim may wait for its Node; then the NodeClaim is deleted
	// and its instance terminated.
	RegistrationTimeout time.Duration
	// RebootObservationWindow is how long a node node repair rebooted has to come back before it is replaced.
	RebootObservationWindow time.Duration
	// MetricsPort is the port of the Prometheus /metrics endpoint.
	MetricsPort int
	// HealthProbePort is the port of the /healthz and /readyz endpoints.
	HealthProbePort int
	// LogLevel is one of debug, info, warn, error.
	LogLevel string
	// KubeClientQPS and KubeClientBurst rate-limit calls to the API server.
	KubeClientQPS   int
	KubeClientBurst int
	// EnableProfiling serves pprof handlers on the metrics endpoint.
	EnableProfiling bool
	// DisableLeaderElection runs the controllers without taking the leader lease.
	DisableLeaderElection bool
	// LeaderElectionName names the leader-election Lease (Karpenter's by default, so the two never lead at once).
	LeaderElectionName string
	// LeaderElectionNamespace is the Lease's namespace; empty means the controller's own namespace.
	LeaderElectionNamespace string
	// PreferencePolicy is Respect or Ignore.
	PreferencePolicy string
	// MinValuesPolicy is Strict or BestEffort.
	MinValuesPolicy string
	// NodeRepairTolerations replace the cloud provider's toleration of the named node conditions before node
	// repair; nil keeps the provider's. Which condition types exist is checked by the node health controller.
	NodeRepairTolerations map[string]time.Duration
	// FeatureGates holds every known gate with its value (defaults filled in).
	FeatureGates map[string]bool
	// AWSFeatureGates holds every gate of AWS_FEATURE_GATES with its value (defaults filled in).
	AWSFeatureGates map[string]bool

	// KarpenterService is the name of the controller's Service (KARPENTER_SERVICE). Karpenter v1.14 and v1.15 read
	// it and use it for nothing (it named the Service of webhooks they no longer serve); so does Dovetail.
	KarpenterService string
	// DisableControllerWarmup keeps the controllers' watches from starting before the leader lease is won.
	DisableControllerWarmup bool
	// DisableClusterStateObservability turns off the cluster-state metrics (pods, nodes, NodePools) and the
	// status-condition metrics and events.
	DisableClusterStateObservability bool
	// MemoryLimit is the container's memory limit in bytes; zero or less means none (Karpenter's default is -1).
	MemoryLimit int64
	// CPURequests is the container's CPU request in millicores (never zero or less: those read as 1000).
	CPURequests int64
	// LogOutputPaths are where logs go: stdout, stderr or file paths.
	LogOutputPaths []string
	// LogErrorOutputPaths are where the logger's own errors (a log line it could not write) go.
	LogErrorOutputPaths []string
	// IgnoreDRARequests (true by default) leaves pods with dynamic resource allocation claims out of provisioning.
	IgnoreDRARequests bool
	// EKSControlPlane reads the Kubernetes version from EKS DescribeCluster instead of the API server.
	EKSControlPlane bool
	// KubernetesVersionRefreshInterval is how often the cluster's Kubernetes version is read again (zero: the
	// provider's default of 5 minutes).
	KubernetesVersionRefreshInterval time.Duration
	// DisableDryRun turns off the launch dry runs that validate EC2NodeClasses (pkg/controllers/nodeclass/status).
	DisableDryRun bool
	// EnableZonalShift makes the AWS provider follow the cluster's ARC zonal shifts (no launches into a shifted zone).
	EnableZonalShift bool
	// AMIRefreshInterval, SubnetRefreshInterval and SecurityGroupRefreshInterval are how often an EC2NodeClass's
	// AMIs, subnets and security groups are resolved again.
	AMIRefreshInterval           time.Duration
	SubnetRefreshInterval        time.Duration
	SecurityGroupRefreshInterval time.Duration
	// LegacyNodeRepair selects the legacy node repair controller (node.health) instead of repair as a disruption method.
	LegacyNodeRepair bool
	// SchedulerConfig is SCHEDULER_CONFIG as given.
	SchedulerConfig string
	// DefaultSpreadConstraints are SCHEDULER_CONFIG's podTopologySpread.defaultConstraints: scheduling gives them,
	// with a selector deduced as the kube-scheduler deduces it, to pods without constraints of their own.
	DefaultSpreadConstraints []corev1.TopologySpreadConstraint

	// Warnings are things about the settings the operator should hear once at start (e.g. a feature gate that
	// Karpenter removed and that does nothing); they are not errors.
	Warnings []string
}

// FeatureEnabled reports whether the named gate is on.
func (s *Settings) FeatureEnabled(name string) bool { return s.FeatureGates[name] }

// AWSFeatureEnabled reports whether the named gate of AWS_FEATURE_GATES is on.
func (s *Settings) AWSFeatureEnabled(name string) bool { return s.AWSFeatureGates[name] }
