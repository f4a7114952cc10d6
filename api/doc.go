// Package api holds Dovetail's API groups in versioned subpackages (karpenter/v1 for karpenter.sh,
// aws/v1 for karpenter.k8s.aws) and, in its tests, the validation suite that applies manifests to a real
// kube-apiserver with the generated CRDs from config/crd installed.
package api
