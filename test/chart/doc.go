// Package chart checks the Helm chart in charts/dovetail against the code: every environment variable it sets
// is a controller setting (pkg/settings) or a documented extra, every value a template reads exists in
// values.yaml, its CRDs are the generated ones, and its templates render to valid Kubernetes objects.
package chart
