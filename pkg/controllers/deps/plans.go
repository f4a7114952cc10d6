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

// PlannedPodsAnnotationKey is set by the provisioner on each NodeClaim it creates: the UIDs of the pending pods
// it planned there, comma-separated (at most MaxPlannedPodsAnnotated). A restarted provisioner keeps those pods
// on their in-flight NodeClaims (its pins) rather than planning them afresh, which launched again for pods that
// had room on their way. It stays on the NodeClaim, never on its Node.
const PlannedPodsAnnotationKey = "dovetail.sh/planned-pods"

// MaxPlannedPodsAnnotated bounds the UIDs written in PlannedPodsAnnotationKey (about 37 KB); the pods of a
// NodeClaim planned with more are planned afresh after a restart.
const MaxPlannedPodsAnnotated = 1000
