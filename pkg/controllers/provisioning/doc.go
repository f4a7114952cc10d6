// Package provisioning watches pending pods, groups them into batches (BATCH_IDLE_DURATION/BATCH_MAX_DURATION),
// snapshots NodePools, instance types and in-flight NodeClaims, asks a solver.Solver where the pods go, and
// creates the NodeClaims the plan calls for, with Nominated and FailedScheduling events on the pods.
package provisioning
