package metrics

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AsksForDynamicResources says whether the pod asks for dynamic resource allocation: pod resource claims, or a
// container (init containers included) naming claims. It is the dynamic_resources label of the pod metrics.
func AsksForDynamicResources(p *corev1.Pod) bool {
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if len(cs[i].Resources.Claims) > 0 {
				return true
			}
		}
	}
	return false
}

// PodSchedulingTimes keeps, for each pod the provisioner saw pending, three moments: when it first saw it
// (acknowledged), when a provisioning pass first decided on it (a place, or no place), and when a pass first found
// it a place on a node or a new NodeClaim (schedulable; forgotten again when a later pass finds it none). The
// provisioning controller writes them, the pod metrics controller observes the provisioning histograms from them
// and forgets a pod once it started, ended or went away, and the pod collector makes the provisioning gauges from
// them at each scrape. Only pods seen pending have an entry.
type PodSchedulingTimes struct {
	mu   sync.Mutex
	pods map[types.NamespacedName]*PodTimes
}

// PodTimes are one pod's moments; a zero time is a moment that has not come.
type PodTimes struct {
	// UID tells a pod from a later one of the same name.
	UID                         types.UID
	Acked, Decided, Schedulable time.Time
}

// NewPodSchedulingTimes returns an empty store.
func NewPodSchedulingTimes() *PodSchedulingTimes {
	return &PodSchedulingTimes{pods: map[types.NamespacedName]*PodTimes{}}
}

// entry returns the pod's entry, made (or remade, for a pod of another UID) when missing. Call it locked.
func (s *PodSchedulingTimes) entry(key types.NamespacedName, uid types.UID) *PodTimes {
	e, ok := s.pods[key]
	if !ok || e.UID != uid {
		e = &PodTimes{UID: uid}
		s.pods[key] = e
	}
	return e
}

// Ack records that the provisioner saw the pending pod at now, unless it saw it before.
func (s *PodSchedulingTimes) Ack(key types.NamespacedName, uid types.UID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entry(key, uid); e.Acked.IsZero() {
		e.Acked = now
	}
}

// Decide records a pass's decision on the pod at now: scheduled says it found the pod a place. A pod with no place
// loses its schedulable time; one with a place keeps the first.
func (s *PodSchedulingTimes) Decide(key types.NamespacedName, uid types.UID, now time.Time, scheduled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key, uid)
	if e.Decided.IsZero() {
		e.Decided = now
	}
	switch {
	case !scheduled:
		e.Schedulable = time.Time{}
	case e.Schedulable.IsZero():
		e.Schedulable = now
	}
}

// Get returns the pod's moments; ok is false when it has none (or only a pod of another UID has).
func (s *PodSchedulingTimes) Get(key types.NamespacedName, uid types.UID) (PodTimes, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.pods[key]
	if !ok || (uid != "" && e.UID != uid) {
		return PodTimes{}, false
	}
	return *e, true
}

// Forget drops the pod's moments.
func (s *PodSchedulingTimes) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, key)
}

// Len is the number of pods with moments.
func (s *PodSchedulingTimes) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

// snapshot copies the moments, for a scrape.
func (s *PodSchedulingTimes) snapshot() map[types.NamespacedName]PodTimes {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[types.NamespacedName]PodTimes, len(s.pods))
	for k, e := range s.pods {
		out[k] = *e
	}
	return out
}
