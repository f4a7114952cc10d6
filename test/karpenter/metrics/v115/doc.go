// Package v115 is the metrics oracle of test/karpenter/metrics for Karpenter v1.15 (sigs.k8s.io/karpenter and
// github.com/aws/karpenter-provider-aws v1.15.0): a module of its own, since one module holds one Karpenter version.
// It checks the v1.15 entries of ../testdata/karpenter-metrics.json.
package v115
