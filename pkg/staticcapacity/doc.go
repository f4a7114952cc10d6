// Package staticcapacity decides what a static NodePool (spec.replicas set) needs next: NodeClaims to create
// (to reach replicas, or to replace drifted ones before they go) and NodeClaims to delete (surplus after a
// scale-down or a drift replacement), within the NodePool's limits.nodes and disruption budgets. It is pure: a
// snapshot in, a plan out.
package staticcapacity
