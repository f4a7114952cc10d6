// Package static keeps a static NodePool (spec.replicas set, StaticCapacity feature gate) at exactly replicas
// NodeClaims: it creates NodeClaims from the template regardless of pods, deletes the surplus after a
// scale-down, and replaces drifted NodeClaims (replacement first), within limits.nodes and the disruption
// budgets. The decisions are pkg/staticcapacity's.
package static
