// Package scheduling is Dovetail's provisioning scheduler: a pure function from a Snapshot (pending pods, existing
// nodes and in-flight NodeClaims, NodePools, instance types, DaemonSets, volumes) to a Plan (pods onto existing
// capacity, new NodeClaims with ordered instance-type options, a reason for every pod left out, and a cost lower
// bound). It imports no Kubernetes client code; controllers gather the snapshot and apply the plan.
package scheduling
