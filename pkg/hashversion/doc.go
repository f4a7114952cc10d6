// Package hashversion computes the drift hash of a NodePool's template (NodePool) and decides how a NodeClaim's
// drift hash is carried over when the hashing scheme of its NodePool or node class changes: when Dovetail takes
// over NodeClaims that Karpenter (or an older release) stamped with its own scheme, and when Karpenter takes them
// back.
package hashversion
