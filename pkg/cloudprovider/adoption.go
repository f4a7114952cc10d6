package cloudprovider

import (
	"context"
	"errors"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// ErrNotOwned is wrapped in the NotFoundError of a look-up whose instance exists but does not carry this
// cluster's identity. Callers that must not confuse "gone" with "not ours" (garbage collection deletes the
// NodeClaims of gone instances) test it with errors.Is.
var ErrNotOwned = errors.New("the instance does not carry this cluster's identity")

// IsNotOwned reports whether err says the instance exists but is not this cluster's.
func IsNotOwned(err error) bool { return errors.Is(err, ErrNotOwned) }

// Adoption is what AdoptInstances did.
type Adoption struct {
	// Owned are the provider IDs, among those asked for, whose instances carry this cluster's identity now:
	// adopted by this call or before.
	Owned map[string]bool
	// Adopted are the provider IDs this call tagged with the cluster's identity (a subset of Owned).
	Adopted []string
	// Refused maps provider IDs whose instance exists but cannot be adopted to the reason (another cluster's
	// identity, another cluster's name, a NodeClaim tag naming another NodeClaim).
	Refused map[string]string
}

// Adopter is implemented by cloud providers whose instances carry a cluster identity that another controller
// (Karpenter, or an older release) did not set. A NodeClaim of this cluster that names an instance (its
// status.providerID) is proof the instance was launched for this cluster: AdoptInstances gives such instances
// this cluster's identity, so that every later action (termination, drift, garbage collection, interruption) treats
// them as this cluster's, and only them.
type Adopter interface {
	AdoptInstances(ctx context.Context, nodeClaims []*karpv1.NodeClaim) (Adoption, error)
}
