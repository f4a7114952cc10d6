// Package rss measures the controller's memory at 1,000 nodes without a scale-out: an envtest API server, the AWS
// simulator and the controller binary as separate processes, 1,000 NodeClaims created directly (launched by the
// controller, their Nodes written by the simulator), ten pods and a DaemonSet pod bound to each node. The test is
// behind the `bench` build tag; run it with `make bench-rss` (figures in docs/benchmarks.md).
package rss
