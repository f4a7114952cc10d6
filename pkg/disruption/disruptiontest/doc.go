// Package disruptiontest builds disruption snapshots at scale (the scaled-in benchmark cluster) and simulates the
// disruption controller's loop on them with an injected clock, for the disruption benchmark and tests outside
// package disruption.
package disruptiontest
