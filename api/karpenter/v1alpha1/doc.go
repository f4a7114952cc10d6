// Package v1alpha1 holds the karpenter.sh/v1alpha1 API types Dovetail serves: NodeOverlay, which changes the
// price or adds extended resources to the instance types its requirements select, before any scheduling
// decision sees them. The Go and JSON names follow Karpenter v1.14 so that existing manifests apply unchanged.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
