// Package solver decides where pending pods go: into NodeClaims already in flight or into new NodeClaims of a
// NodePool. A Solver is a pure function of a snapshot (no API calls); this package holds the interface, its input
// and plan types, and resource arithmetic. The implementation is the scheduler of pkg/scheduling, through
// solver/adapter.
package solver
