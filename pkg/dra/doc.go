// Package dra answers whether resource claims can be allocated on a node, and how many times, with the
// kube-scheduler's own structured-parameters allocator (k8s.io/dynamic-resource-allocation) and its CEL evaluation.
// It is pure Go: the caller hands it DeviceClasses, ResourceSlices and claims. Device models of instance types live
// in the devices subpackage.
package dra
