// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 CapacityBuffer type, the API Cluster Autoscaler and
// Karpenter share for spare capacity: a buffer names a pod shape and a count, and the autoscaler keeps room for
// that many pods of that shape. Go and JSON names follow the upstream definition so manifests apply unchanged.
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
