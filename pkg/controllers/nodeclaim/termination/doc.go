// Package termination is the controller behind the karpenter.sh/termination finalizer on NodeClaims: when a
// NodeClaim is deleted it records the termination deadline, deletes the NodeClaim's Nodes (whose own finalizer
// drains them), makes sure the instance is terminated and then releases the finalizer.
package termination
