package dra

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
)

// AllocateUncached is Allocate with every device of the node handed to the allocator as it is.
func (n *Node) AllocateUncached(ctx context.Context, claims []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, bool, error) {
	if len(claims) == 0 {
		return nil, true, nil
	}
	if len(n.slices) == 0 {
		return nil, false, nil
	}
	return n.allocate(ctx, claims, n.state, n.slices)
}

// FitUncached is Fit with every device of the node handed to the allocator as it is, each round.
func (n *Node) FitUncached(ctx context.Context, claims []*resourcev1.ResourceClaim, max int) (int, error) {
	c := n.Clone()
	for k := 0; k < max; k++ {
		_, ok, err := c.AllocateUncached(ctx, claims)
		if err != nil || !ok {
			return k, err
		}
	}
	return max, nil
}

// SelectorLookups returns how many selector outcomes the allocator found remembered (hits) and had to evaluate
// (misses).
func (a *Allocator) SelectorLookups() (hits, misses int) {
	a.memo.mu.Lock()
	defer a.memo.mu.Unlock()
	return a.memo.hits, a.memo.misses
}
