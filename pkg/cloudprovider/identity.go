package cloudprovider

import "context"

// NameConflict is another cluster that uses this cluster's name in the same cloud account and region: its
// resources carry this cluster's name tag but another cluster's identity.
type NameConflict struct {
	// ClusterUID identifies the other cluster (the cluster-UID tag on its resources).
	ClusterUID string
	// Resources are the ids of its resources found carrying this cluster's name (instances, launch templates),
	// sorted.
	Resources []string
}

// NameCheck is what a look for other clusters using this cluster's name found.
type NameCheck struct {
	// Conflicts are the other clusters whose resources carry this cluster's name, sorted by UID; none when the
	// name is this cluster's alone.
	Conflicts []NameConflict
	// Listed counts the resources carrying the name that the check read, this cluster's own included: what the
	// check cost.
	Listed int
}

// NameConflictDetector is implemented by cloud providers that can see whether other clusters use this
// cluster's name in the account. Dovetail never acts on such resources; the detector only lets it warn.
type NameConflictDetector interface {
	// NameConflicts looks for other clusters whose resources carry this cluster's name.
	NameConflicts(ctx context.Context) (NameCheck, error)
}
