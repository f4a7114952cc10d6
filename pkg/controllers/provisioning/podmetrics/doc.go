// Package podmetrics records karpenter_pods_startup_duration_seconds: the time from a pod's creation until its
// first container started, for pods that run on nodes Dovetail launched.
package podmetrics
