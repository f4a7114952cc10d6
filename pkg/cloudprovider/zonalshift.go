package cloudprovider

import (
	"context"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Zone is one zone a NodePool can launch into: its name (topology.kubernetes.io/zone) and, where the cloud has
// one, its ID (topology.k8s.aws/zone-id).
type Zone struct {
	Name string
	ID   string
}

// ZonalShiftWatcher is a cloud provider that follows the zonal shifts of the cluster (traffic moved away from a
// zone): offerings in a shifted zone are unavailable while the shift lasts. The zonalshift controller polls it
// and tells the affected NodePools.
type ZonalShiftWatcher interface {
	// ZonalShiftEnabled reports whether shifts are followed at all (ENABLE_ZONAL_SHIFT).
	ZonalShiftEnabled() bool
	// UpdateZonalShifts reads the current shifts from the cloud.
	UpdateZonalShifts(ctx context.Context) error
	// ShiftedZoneIDs returns the IDs of the zones shifted away from now, as last read, sorted.
	ShiftedZoneIDs() []string
	// NodePoolZones returns the zones the NodePool's node class can launch into.
	NodePoolZones(ctx context.Context, nodePool *karpv1.NodePool) ([]Zone, error)
}
