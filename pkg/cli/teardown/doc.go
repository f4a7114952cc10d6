// Package teardown implements `dovetailctl teardown`: it stops provisioning, deletes NodePools and NodeClaims,
// waits while the cluster's own Dovetail controller drains nodes and terminates instances, deletes
// EC2NodeClasses (whose finalizer removes instance profiles and launch templates) and reports what is left on AWS.
package teardown
