package scheduling

import (
	"context"
	"fmt"
)

// SolvePlaced builds the plan's new nodes by hand instead of by first-fit-decreasing: one node per entry of nodes,
// holding the named pods (placed in the order given, each node growing to its cheapest fitting option, in the zone
// placement would choose), then runs the improvement pass, with or without its repack and exchange steps, and
// returns the plan.
func SolvePlaced(snap *Snapshot, nodes [][]string, repack, exchange bool) (*Plan, error) {
	return solvePlaced(snap, nodes, func(s *solver) { s.noRepack, s.noExchange = !repack, !exchange })
}

// SolvePlacedRezone is SolvePlaced without repack and exchange, with or without the rezone step.
func SolvePlacedRezone(snap *Snapshot, nodes [][]string, rezone bool) (*Plan, error) {
	return solvePlaced(snap, nodes, func(s *solver) { s.noRepack, s.noExchange, s.noRezone = true, true, !rezone })
}

func solvePlaced(snap *Snapshot, nodes [][]string, set func(*solver)) (*Plan, error) {
	s := newSolver(context.Background(), snap, Options{MaxInstanceTypes: 60})
	set(s)
	if err := s.prepare(); err != nil {
		return nil, err
	}
	byName := map[string]*podInfo{}
	for _, c := range s.classes {
		for _, p := range c.pods {
			byName[p.key.Name] = p
		}
	}
	for _, names := range nodes {
		var n *candidate
		for _, name := range names {
			p, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("no pending pod %s", name)
			}
			var a attempt
			if n == nil {
				n, a = s.newNodeFor(p.class)
				if n == nil {
					return nil, fmt.Errorf("no new node for %s", name)
				}
				s.addNode(n)
			} else if a = s.try(p.class, n, true); !a.ok {
				return nil, fmt.Errorf("%s does not fit on %s: %s", name, n.name, a.why())
			}
			s.commit(p.class, p, n, a)
		}
	}
	s.improve()
	return s.plan(), nil
}

// BoundAndWorth solves snap and returns the lower bound's linear program value and what classWorth says the pods
// planned on new nodes are worth in all (the two should agree).
func BoundAndWorth(snap *Snapshot) (lp, worth float64, err error) {
	s := newSolver(context.Background(), snap, Options{MaxInstanceTypes: 60})
	if err := s.prepare(); err != nil {
		return 0, 0, err
	}
	if err := s.placeClasses(); err != nil {
		return 0, 0, err
	}
	prog, _, _ := s.boundProgram()
	if prog == nil {
		return 0, 0, nil
	}
	lp = prog.solve()
	w := s.classWorth()
	for _, n := range s.nodes[len(s.existing):] {
		for _, p := range n.pods {
			worth += w[p.class.id]
		}
	}
	return lp, worth, nil
}
