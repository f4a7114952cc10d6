// Package disruption runs voluntary disruption: every pass it gathers Dovetail's nodes into a snapshot, asks
// pkg/disruption for at most one command (drift, emptiness, consolidation), and carries it out durably: taint,
// launch replacements, wait for them to initialize, then delete the old NodeClaims (which termination drains).
package disruption
