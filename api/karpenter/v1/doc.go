// Package v1 holds the karpenter.sh/v1 API types that Dovetail serves: NodePool and NodeClaim, plus the
// well-known label, annotation, taint, finalizer and condition names that controllers share. The types keep
// the Go and JSON names of Karpenter v1 so that existing manifests apply unchanged.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
