package scheduling

import (
	"fmt"
	"strings"
)

// explainClass returns one short reason per NodePool why a pod of c could not be placed.
func (s *solver) explainClass(c *class) string {
	if len(s.pools) == 0 {
		if len(s.existing) == 0 {
			return "no NodePool and no existing node"
		}
		return "no existing node fits and there is no NodePool"
	}
	var parts []string
	for _, p := range s.pools {
		parts = append(parts, fmt.Sprintf("nodepool %s: %s", p.np.Name, s.explainPool(c, p)))
	}
	out := strings.Join(parts, "; ")
	if len(c.cur.relaxed) > 0 {
		out += " (after relaxing " + strings.Join(c.cur.relaxed, ", ") + ")"
	}
	return out
}

func (s *solver) explainPool(c *class, p *poolInfo) string {
	if t := untolerated(p.taints, c.tolerations); t != nil {
		return fmt.Sprintf("pod does not tolerate taint %s", taintString(t))
	}
	if len(p.types) == 0 {
		return "no instance types"
	}
	base := s.sigFor(p, p.reqs)
	if base.err != "" {
		return base.err
	}
	nr := s.narrow(base, c.cur)
	if nr.sig == nil {
		return nr.reason
	}
	g := nr.sig
	if !Fits(s.dims.Zero(), c.req, g.maxAvl) {
		for i := range c.req {
			if c.req[i] > g.maxAvl[i] {
				what := "largest instance type allowed"
				if g != base {
					what += " with the pod's requirements"
				}
				return fmt.Sprintf("requests %s %s; %s by NodePool %s has %s", s.dims.FormatValue(i, c.req[i]), s.dims.Name(i),
					what, p.np.Name, s.dims.FormatValue(i, g.maxAvl[i]))
			}
		}
	}
	if p.limNodes >= 0 && p.nodes+1 > p.limNodes {
		return fmt.Sprintf("limit of %d nodes reached", p.limNodes)
	}
	fitsAlone, fitsLimits := false, false
	for _, o := range g.opts {
		if c.req.LessEq(o.t.avail) {
			fitsAlone = true
			if s.fitsPoolLimits(p, o.t) {
				fitsLimits = true
				break
			}
		}
	}
	if !fitsAlone {
		return fmt.Sprintf("no instance type allowed by NodePool %s fits requests %s", p.np.Name, s.dims.Format(c.req))
	}
	if !fitsLimits {
		var lims []string
		for i, lim := range p.limited {
			if lim {
				lims = append(lims, fmt.Sprintf("%s %s of %s in use", s.dims.Name(i), s.dims.FormatValue(i, p.used[i]), s.dims.FormatValue(i, p.limits[i])))
			}
		}
		return "every instance type that fits would exceed the NodePool's limits (" + strings.Join(lims, ", ") + ")"
	}
	n := &candidate{idx: len(s.nodes), name: p.np.Name + "-explain", sig: g, used: s.dims.Zero()}
	for i, o := range g.opts {
		if c.req.LessEq(o.t.avail) {
			n.ptr, n.cost = i, o.price
			break
		}
	}
	a := s.try(c, n, true)
	if a.ok {
		return "fits on a new node but was not placed (internal ordering); retry"
	}
	return a.why()
}
