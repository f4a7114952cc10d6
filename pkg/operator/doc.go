// Package operator builds Dovetail's controller manager from settings: logger, Kubernetes clients and scheme,
// leader election, health and metrics endpoints, field indexes, event recorder, the cloud provider, and the
// controllers listed in pkg/controllers. cmd/dovetail only parses settings and calls Run.
package operator
