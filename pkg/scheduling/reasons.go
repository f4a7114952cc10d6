package scheduling

import (
	"strings"
)

// ReasonCode is a stable, machine-readable category of why a pod could not be placed (for metrics and alerts).
type ReasonCode string

// Reason codes. A pod unschedulable on several NodePools gets the code of the NodePool whose analysis got
// furthest (ties: the highest-weight NodePool).
const (
	// ReasonResources: requests (cpu, memory, pods, ephemeral-storage, extended resources) exceed every candidate.
	ReasonResources ReasonCode = "Resources"
	// ReasonTaints: the pod does not tolerate the NodePool's taints.
	ReasonTaints ReasonCode = "Taints"
	// ReasonRequirements: nodeSelector / required node affinity conflict with the NodePool, or minValues fail.
	ReasonRequirements ReasonCode = "Requirements"
	// ReasonLimits: the NodePool's limits (cpu, memory, nodes, ...) leave no room.
	ReasonLimits ReasonCode = "Limits"
	// ReasonOfferings: no available offering in the allowed zones and capacity types.
	ReasonOfferings ReasonCode = "Offerings"
	// ReasonTopologySpread: a topology spread constraint cannot be met.
	ReasonTopologySpread ReasonCode = "TopologySpread"
	// ReasonPodAffinity: required pod affinity or anti-affinity cannot be met.
	ReasonPodAffinity ReasonCode = "PodAffinity"
	// ReasonVolumes: a volume is missing, unbound with Immediate binding, or its topology conflicts.
	ReasonVolumes ReasonCode = "Volumes"
	// ReasonHostPorts: the pod's host ports conflict.
	ReasonHostPorts ReasonCode = "HostPorts"
	// ReasonNoNodePool: there is no NodePool (and no existing node takes the pod).
	ReasonNoNodePool ReasonCode = "NoNodePool"
	// ReasonOther: none of the above (e.g. the pod fits alone but lost to other pods in the same pass).
	ReasonOther ReasonCode = "Other"
)

// explainClass returns one short reason per NodePool why a pod of c could not be placed, and records the class's
// reason code. It runs only for classes left unplaced.
func (s *solver) explainClass(c *class) string {
	if len(s.pools) == 0 {
		c.code = ReasonNoNodePool
		if len(s.existing) == 0 {
			return "no NodePool and no existing node"
		}
		return "no existing node fits and there is no NodePool"
	}
	var parts []string
	best := -1
	for _, p := range s.pools {
		e := s.analyzePool(c, p)
		reason, code := e.Reason, e.Code
		if e.Fits {
			reason, code = "fits on a new node but was not placed (other pods of this pass took the room); retry", ReasonOther
		}
		parts = append(parts, "nodepool "+p.np.Name+": "+reason)
		if pr := progress(e); pr > best {
			best, c.code = pr, code
		}
	}
	out := strings.Join(parts, "; ")
	if len(c.cur.relaxed) > 0 {
		out += " (after relaxing " + strings.Join(c.cur.relaxed, ", ") + ")"
	}
	return out
}

// failureCode is the reason code of a pod the solve left unplaced.
func (s *solver) failureCode(p *podInfo) ReasonCode {
	c := p.class
	switch {
	case c == nil:
		return ReasonOther
	case c.err != "":
		return s.classErrCode(c)
	case c.code != "":
		return c.code
	}
	return ReasonOther
}
