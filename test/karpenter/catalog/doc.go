// Package metrics checks Dovetail's metrics (pkg/metrics) against the collectors Karpenter v1.14's packages and
// its AWS provider register: every metric Dovetail's catalog calls the same as Karpenter's must have Karpenter's
// type and label names. It is a nested module so the main module never depends on Karpenter.
package metrics
