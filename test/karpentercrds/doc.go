// Package karpentercrds compares Dovetail's CRDs (config/crd) with Karpenter v1.15.0's, read from the Go module
// github.com/aws/karpenter-provider-aws (its zip holds pkg/apis/crds): for every kind and every schema path, the
// properties, types, formats, enums, defaults, required fields, bounds, patterns, pruning and CEL rules. Every
// difference is either absent or listed, with its reason, in the exceptions of crds_test.go. It is a nested module
// so that the main module does not depend on Karpenter; hack/test-karpenter-crds.sh runs it.
package karpentercrds
