// Package disruptionview is what the disruption and pod deletion cost controllers read of the cluster: a pass's
// View (Observe), the decision's snapshot built from it (BuildSnapshot), and the command records that candidates
// of a disruption in progress carry. Both controllers share it, so neither imports the other.
package disruptionview
