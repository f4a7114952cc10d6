package cloudprovider

import (
	"context"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// DriftReason names why a NodeClaim no longer matches its node class; empty means not drifted.
type DriftReason string

// CloudProvider is what Dovetail's controllers need from a cloud. Implementations must be safe for concurrent use.
type CloudProvider interface {
	// Create launches an instance for the NodeClaim, choosing among the instance types and offerings its
	// requirements allow, and returns the NodeClaim with status filled in (providerID, imageID, capacity,
	// allocatable) and labels for instance type, zone and capacity type. It returns an InsufficientCapacityError
	// when no allowed offering could be launched and a NodeClassNotReadyError when the node class cannot be used.
	Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete terminates the NodeClaim's instance. It returns a NotFoundError once the instance is gone
	// (terminated or unknown), so callers can loop until then.
	Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error
	// Get returns what the cloud knows of the instance with that provider ID, or a NotFoundError.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
	// List returns a NodeClaim-shaped view of every live instance this cluster launched. An instance the cloud
	// is already terminating has its DeletionTimestamp set.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
	// GetInstanceTypes returns the instance types the NodePool's node class can launch, with offerings.
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*InstanceType, error)
	// IsDrifted reports whether the instance no longer matches its node class.
	IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (DriftReason, error)
	// RepairPolicies are the Node conditions after which an unhealthy node is repaired (NodeRepair feature gate).
	// An empty list means the provider never asks for repair.
	RepairPolicies() []RepairPolicy
	// Name names the provider, e.g. "aws".
	Name() string
}

// Wrapper is implemented by cloud providers that decorate another one (metrics, NodeOverlays).
type Wrapper interface {
	Unwrap() CloudProvider
}

// Find returns the first provider in the chain cp, cp.Unwrap(), ... that is a T.
func Find[T any](cp CloudProvider) (T, bool) {
	for cp != nil {
		if t, ok := cp.(T); ok {
			return t, true
		}
		w, ok := cp.(Wrapper)
		if !ok {
			break
		}
		cp = w.Unwrap()
	}
	var zero T
	return zero, false
}

// InstanceTypeOverlay rewrites instance types as the cluster's NodeOverlays say, for a NodePool whose nodes carry
// poolLabels (its template labels and karpenter.sh/nodepool). A provider given one (SetInstanceTypeOverlay)
// launches with the overlaid prices and capacities.
type InstanceTypeOverlay interface {
	OverlayInstanceTypes(poolLabels map[string]string, its []*InstanceType) ([]*InstanceType, error)
}
