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

// SelectorReads returns what the expression reads from the device ("driver", "multi", "attribute d/n",
// "capacity d/n"), or ok=false when it is evaluated per device.
func SelectorReads(expression string) (reads []string, ok bool) {
	m := newSelectorMemo()
	refs := m.refs[m.exprID(expression)]
	if refs == nil {
		return nil, false
	}
	reads = []string{}
	for _, r := range refs {
		switch r.kind {
		case 'd':
			reads = append(reads, "driver")
		case 'm':
			reads = append(reads, "multi")
		case 'a':
			reads = append(reads, "attribute "+r.domain+"/"+r.name)
		case 'c':
			reads = append(reads, "capacity "+r.domain+"/"+r.name)
		}
	}
	return reads, true
}
