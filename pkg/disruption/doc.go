// Package disruption decides which of Dovetail's nodes to give back, and how: delete a node whose pods fit
// elsewhere, replace nodes with fewer or cheaper ones, or replace a drifted node. It is pure: it reads a Snapshot
// (candidates with their pods, NodePool budgets, the cluster as the scheduler sees it), simulates rescheduling
// with pkg/scheduling, and returns every Command a pass can start at once within budgets (each simulated on the
// cluster as the earlier ones leave it) plus, for every node it left alone, why.
package disruption
