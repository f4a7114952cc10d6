// Package solver decides where pending pods go: into NodeClaims already in flight or into new NodeClaims of a
// NodePool. It is a pure function of a snapshot (no API calls). FirstFit is a simple placeholder; the real
// scheduler in pkg/scheduling implements the same Solver interface and replaces it in provisioning.New.
package solver
