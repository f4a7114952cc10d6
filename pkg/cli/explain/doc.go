// Package explain is `dovetailctl explain`: it reads the cluster the kubeconfig points at and says why a pending
// pod has no capacity (per NodePool: which constraint removed which instance types and offerings, and what change
// would let it schedule) or why a node stays (its NodeClaim, conditions, and the pods that block its disruption).
package explain
