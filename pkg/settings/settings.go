// Package settings holds the controller's settings, parsed once at start from flags with environment-variable
// fallbacks named as Karpenter's (CLUSTER_NAME, BATCH_IDLE_DURATION, ...), and validated with one clear error.
package settings

import "time"

// Settings are the controller's settings. The zero value is not valid: use Parse.
type Settings struct {
	ClusterName             string
	ClusterEndpoint         string
	ClusterCABundle         string
	InterruptionQueue       string
	IsolatedVPC             bool
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	BatchIdleDuration       time.Duration
	BatchMaxDuration        time.Duration
	MetricsPort             int
	HealthProbePort         int
	LogLevel                string
	KubeClientQPS           int
	KubeClientBurst         int
	EnableProfiling         bool
	DisableLeaderElection   bool
	PreferencePolicy        string
	MinValuesPolicy         string
	FeatureGates            map[string]bool
}
