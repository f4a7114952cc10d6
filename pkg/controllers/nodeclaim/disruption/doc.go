// Package disruption keeps the NodeClaim conditions the disruption controller acts on: Drifted (the NodePool's
// template hash or requirements, or the cloud provider, no longer match the node) and Consolidatable
// (consolidateAfter has passed since the last pod event). It also deletes NodeClaims older than expireAfter.
package disruption
