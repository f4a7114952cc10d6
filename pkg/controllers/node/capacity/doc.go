// Package capacity teaches the cloud provider the real capacity of the instance types it launches: as a Node
// registers for a NodeClaim (and for every registered Node at start), it hands the Node and its NodeClaim to the
// cloud provider's CapacityLearner, which plans later launches of that type with what the Node reports.
package capacity
