// Package explain is `dovetailctl explain`: it reads the cluster the kubeconfig points at and says why a pending
// pod has no capacity (per NodePool: which constraint removed which instance types and offerings, and what change
// would let it schedule) or why a node stays (its NodeClaim, conditions, the pods that block its disruption, and
// what the disruption controller's decision, run on the controller's kind of snapshot, would do with it now).
package explain
