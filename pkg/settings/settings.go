package settings

import (
	"time"
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
)

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
}

// FeatureEnabled reports whether the named gate is on.
func (s *Settings) FeatureEnabled(name string) bool { return s.FeatureGates[name] }
