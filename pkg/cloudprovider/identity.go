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

// NameConflictDetector is implemented by cloud providers that can see whether other clusters use this
// cluster's name in the account. Dovetail never acts on such resources; the detector only lets it warn.
type NameConflictDetector interface {
	// NameConflicts returns the other clusters whose resources carry this cluster's name, sorted by UID; none
	// when the name is this cluster's alone.
	NameConflicts(ctx context.Context) ([]NameConflict, error)
}
