// Package health is the node repair controller (the NodeRepair feature gate): it force-terminates a node whose
// condition has matched one of the cloud provider's repair policies for the policy's toleration, by stamping its
// NodeClaim's termination deadline with the current time (so the drain deletes pods without waiting for
// PodDisruptionBudgets) and deleting the NodeClaim; a NodePool with more unhealthy nodes than the safety limit
// holds repair back and says so with a NodeRepairBlocked event. Decisions come from pkg/repair.
package health
