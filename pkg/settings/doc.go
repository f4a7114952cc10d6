// Package settings holds the controller's settings, parsed once at start from flags with environment-variable
// fallbacks named as Karpenter's (CLUSTER_NAME, BATCH_IDLE_DURATION, ...), and validated with one clear error
// that names the offending setting.
package settings
