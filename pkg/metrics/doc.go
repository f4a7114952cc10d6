// Package metrics defines Dovetail's Prometheus metrics, named like Karpenter's where the meaning is the same, in
// one Metrics value built once by the operator and handed to controllers through deps. It also wraps a
// CloudProvider so that every call's duration and errors are recorded.
package metrics
