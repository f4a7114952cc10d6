// Package oracle independently checks a scheduling plan: it builds the cluster the plan would produce (existing
// nodes, new nodes of the chosen instance types with their DaemonSet pods) and runs the kube-scheduler's filter
// semantics (resources, node affinity, taints, host ports, topology spread, inter-pod affinity, volumes) for every
// planned pod with all other pods in place. It shares no code with pkg/scheduling's solver and is meant for tests.
package oracle
