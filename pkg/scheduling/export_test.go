package scheduling

import (
	"context"
	"fmt"
)

// DebugFirstFailure solves snap and describes the first pod left unplaced with its topology groups' counts.
func DebugFirstFailure(snap *Snapshot) string {
	s := newSolver(context.Background(), snap, Options{MaxInstanceTypes: 60})
	if err := s.prepare(); err != nil {
		return err.Error()
	}
	for _, c := range s.classes {
		s.placeClass(c)
		for _, p := range c.pods {
			if why, ok := s.failures[p]; ok {
				out := fmt.Sprintf("%s labels %v failed: %s\n", p.key, c.labels, why)
				for _, g := range s.groupsOf(c) {
					out += fmt.Sprintf("  group %s counts %v constrained %v universe %v C=%v\n", g, g.counts, g.constrained, g.universe, containsGroup(c.cur.groups, g))
				}
				return out
			}
		}
	}
	return ""
}

// DebugGroups solves snap and describes every topology group afterwards.
func DebugGroups(snap *Snapshot) string {
	s := newSolver(context.Background(), snap, Options{MaxInstanceTypes: 60})
	if err := s.prepare(); err != nil {
		return err.Error()
	}
	out := ""
	for _, g := range s.groups {
		out += fmt.Sprintf("before: %s universe %v ucount %v counts %v minDomains %d\n", g, g.universe, g.ucount, g.counts, g.minDomains)
	}
	for _, c := range s.classes {
		s.placeClass(c)
	}
	for _, g := range s.groups {
		out += fmt.Sprintf("after: %s universe %v ucount %v counts %v\n", g, g.universe, g.ucount, g.counts)
	}
	return out
}
