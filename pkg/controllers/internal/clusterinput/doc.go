// Package clusterinput builds the scheduler's input from the cluster (Build): the usable NodePools with their
// instance types and usage, the NodeClaims in flight with the room they have left, the Nodes with their pods and
// attach limits, the DaemonSets, the volume objects, default spread selectors and DRA state. The provisioning
// controller builds it around the pending pods, the disruption controller (through disruptionview) around the pods
// it may move; both share it, so neither reaches into the other's package.
package clusterinput
