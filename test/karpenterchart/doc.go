// Package karpenterchart checks charts/dovetail against Karpenter's own Helm chart, read from the Go module
// github.com/aws/karpenter-provider-aws (its zip holds charts/karpenter): Karpenter's default values equal the
// values files test/chart renders, and the same values files render the same Deployment, environment, Service,
// ServiceAccount, ServiceMonitor, PodDisruptionBudget, aggregated ClusterRole, labels and annotations with both
// charts, except for the differences docs/helm.md lists. It is a nested module so that the main module does not
// depend on Karpenter; hack/test-karpenter-chart.sh runs it.
package karpenterchart
