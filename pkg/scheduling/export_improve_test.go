package scheduling

import "context"

// SolveWithoutImprove solves snap as Solve does, and also reports the plan's cost before the improvement pass.
func SolveWithoutImprove(snap *Snapshot) (before float64, plan *Plan, err error) {
	s := newSolver(context.Background(), snap, Options{MaxInstanceTypes: 60})
	if err := s.prepare(); err != nil {
		return 0, nil, err
	}
	if err := s.placeClasses(); err != nil {
		return 0, nil, err
	}
	for _, n := range s.nodes[len(s.existing):] {
		if len(n.pods) > 0 {
			before += n.cost
		}
	}
	s.improve()
	plan = s.plan()
	plan.LowerBound = s.lowerBound(true)
	plan.Ratio = plan.Cost / plan.LowerBound
	return before, plan, nil
}

// SolveWithoutTopologyMemo solves snap as Solve does (without a bound), checking topology afresh on every node.
func SolveWithoutTopologyMemo(snap *Snapshot) (*Plan, error) {
	s := newSolver(context.Background(), snap, Options{MaxInstanceTypes: 60, Bound: BoundNone})
	s.noTopoMemo = true
	return s.solve()
}

// PodEntries is how many pods' requests the memo holds.
func (m *Memo) PodEntries() int {
	n := 0
	for _, set := range m.sets {
		n += len(set.pods)
	}
	return n
}

// AntiEntries is how many pods' anti-affinity groups the memo holds.
func (m *Memo) AntiEntries() int { return len(m.anti) }
