// Package counter keeps a NodePool's status.resources (sum of its NodeClaims' capacity) and status.nodes up to
// date, exports karpenter_nodepools_usage and karpenter_nodepools_limit, and deletes the NodeClaims of a NodePool
// that is being deleted or gone (without waiting for the garbage collector).
package counter
