package deps

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// PodRef names a pod.
type PodRef struct {
	Namespace, Name string
	UID             types.UID
}

// Plans is the provisioner's latest plan as other controllers need it: which pending pods are planned on
// which NodeClaim, and which pods carry a status.nominatedNodeName that Dovetail set. The provisioner writes
// it after each pass; the NodeClaim lifecycle reads it when a NodeClaim's Node registers, to nominate the
// NodeClaim's pods for that Node before the Node becomes schedulable. Safe for concurrent use.
type Plans struct {
	mu        sync.Mutex
	planned   map[string][]PodRef
	nominated map[types.UID]string
	// budget is how many nodes may carry Dovetail's nominations at once (0: no limit); see NominationBudget.
	budget int
	// surplus are the in-flight NodeClaims (by name) the provisioner's latest pass found surplus: their pods
	// went elsewhere and it deletes them once their grace ends.
	surplus map[string]bool
}

// NewPlans returns an empty plan book.
func NewPlans() *Plans {
	return &Plans{planned: map[string][]PodRef{}, nominated: map[types.UID]string{}}
}

// SetPlanned replaces the pods planned on each NodeClaim (by NodeClaim name).
func (p *Plans) SetPlanned(byClaim map[string][]PodRef) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned = byClaim
}

// SetSurplus replaces the NodeClaims the provisioner found surplus (by name): it deletes them once their grace
// ends, so no other controller should count on their room (the disruption decision does not move pods there).
func (p *Plans) SetSurplus(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.surplus = make(map[string]bool, len(names))
	for _, n := range names {
		p.surplus[n] = true
	}
}

// Surplus reports whether the provisioner's latest pass found the NodeClaim surplus (see SetSurplus). A nil
// Plans knows of none.
func (p *Plans) Surplus(nodeClaim string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.surplus[nodeClaim]
}

// Planned returns the pods planned on the NodeClaim.
func (p *Plans) Planned(nodeClaim string) []PodRef {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PodRef(nil), p.planned[nodeClaim]...)
}

// Nominated returns a copy of the nominations Dovetail set, by pod UID.
func (p *Plans) Nominated() map[types.UID]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.nominated)
}

// UpdateNominated records nominations set (node != "") or cleared (node == "").
func (p *Plans) UpdateNominated(changes map[types.UID]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, node := range changes {
		if node == "" {
			delete(p.nominated, uid)
		} else {
			p.nominated[uid] = node
		}
	}
}

// ForgetNominatedExcept drops the nominations of pods not in keep (pods no longer pending).
func (p *Plans) ForgetNominatedExcept(keep map[types.UID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.nominated {
		if !keep[uid] {
			delete(p.nominated, uid)
		}
	}
}

// NominationBudget is how many nodes may carry Dovetail's nominations at once in a cluster of clusterNodes
// nodes. Each time the kube-scheduler checks a pod against a node that has nominated pods, it copies the pod's
// whole scheduling state (for a hostname topology spread, a count for every node of the cluster) to add them: its
// cost a pod grows with nominated nodes × cluster nodes. In a 2,000-pod scale-out into 5,000 nodes, with about
// 800 nodes carrying nominations, that copying and its garbage were about 80% of the kube-scheduler's CPU and
// each attempt took 0.5-0.7 s of it. The budget keeps nominated nodes × cluster nodes near 250,000 (all of a
// 500-node cluster's nodes; 50 at 5,000 nodes, 12 at 20,000), and never below 12: the pods nominated first are
// those the kube-scheduler is about to place, and the rest follow the plan as the nominations before them are
// bound and cleared.
func NominationBudget(clusterNodes int) int {
	const copiedCounts, least = 250_000, 12
	if clusterNodes <= 0 {
		return copiedCounts
	}
	return max(least, copiedCounts/clusterNodes)
}

// SetNominationBudget sets how many nodes may carry Dovetail's nominations at once (0: no limit).
func (p *Plans) SetNominationBudget(nodes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.budget = nodes
}

// NominationBudget returns how many nodes may carry Dovetail's nominations at once (0: no limit).
func (p *Plans) NominationBudget() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.budget
}

// MayNominateOn reports whether pods may be nominated for node: it carries Dovetail's nominations already, or
// fewer nodes than the budget do.
func (p *Plans) MayNominateOn(node string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.budget <= 0 {
		return true
	}
	nodes := map[string]bool{}
	for _, n := range p.nominated {
		if n == node {
			return true
		}
		nodes[n] = true
	}
	return len(nodes) < p.budget
}

// PlannedPodsAnnotationKey is set by the provisioner on each NodeClaim it creates: the UIDs of the pending pods
// it planned there, comma-separated (at most MaxPlannedPodsAnnotated). A restarted provisioner keeps those pods
// on their in-flight NodeClaims (its pins) rather than planning them afresh, which launched again for pods that
// had room on their way. It stays on the NodeClaim, never on its Node.
const PlannedPodsAnnotationKey = "dovetail.sh/planned-pods"

// MaxPlannedPodsAnnotated bounds the UIDs written in PlannedPodsAnnotationKey (about 37 KB); the pods of a
// NodeClaim planned with more are planned afresh after a restart.
const MaxPlannedPodsAnnotated = 1000
