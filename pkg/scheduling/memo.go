package scheduling

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// Memo lets a series of solves over related snapshots reuse what each would otherwise prepare again: every
// NodePool's instance types as vectors with their DaemonSet overhead, every existing node's label and taint
// signature and allocatable, every bound pod's requests. The simulations of one disruption decision are such a
// series: the same NodePools, instance types and DaemonSets, each with a few nodes removed and their pods pending.
// Preparing those took ~85 % of a 600-node decision's CPU before.
//
// Entries are keyed by the objects' pointers, so an object must not change while a memo that has seen it is in use
// (Solve never modifies its snapshot; code that derives snapshots replaces the nodes and pods it changes). A memo
// starts over by itself when a solve's resource dimensions or DaemonSets differ from the last one's. It is not safe
// for concurrent solves, and changes no plan: a solve with a memo returns what it returns without one.
type Memo struct {
	dims       []corev1.ResourceName
	daemonSets []*appsv1.DaemonSet
	types      map[memoTypeKey]*itInfo
	nodes      map[*StateNode]memoNode
	pods       map[*corev1.Pod]memoPod
	anti       map[*corev1.Pod]memoAnti
	// gen counts Prunes; an entry's gen is the last one it was looked up in.
	gen uint64
	// hits and misses count lookups, for tests and benchmarks.
	hits, misses int
}

type memoPod struct {
	requests Vec
	gen      uint64
}

// memoAnti holds the group definitions of a bound pod's required anti-affinity terms (antiTerms).
type memoAnti struct {
	terms []*groupTerm
	gen   uint64
}

type memoTypeKey struct {
	pool *NodePool
	it   *cloudprovider.InstanceType
}

type memoNode struct {
	staticKey string
	alloc     Vec
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	m := &Memo{}
	m.reset()
	return m
}

func (m *Memo) reset() {
	m.types = map[memoTypeKey]*itInfo{}
	m.nodes = map[*StateNode]memoNode{}
	m.pods = map[*corev1.Pod]memoPod{}
	m.anti = map[*corev1.Pod]memoAnti{}
}

// Prune drops the pods the solves since the last Prune did not look up, and everything else: a memo kept from one
// provisioning pass to the next (bound pods are the informer cache's objects, the same pointers while unchanged)
// then holds the requests of the pods still bound, not of every pod it ever saw.
func (m *Memo) Prune() {
	for p, e := range m.pods {
		if e.gen != m.gen {
			delete(m.pods, p)
		}
	}
	for p, e := range m.anti {
		if e.gen != m.gen {
			delete(m.anti, p)
		}
	}
	m.gen++
	m.types = map[memoTypeKey]*itInfo{}
	m.nodes = map[*StateNode]memoNode{}
}

// Lookups returns how many lookups found an entry and how many did not.
func (m *Memo) Lookups() (hits, misses int) { return m.hits, m.misses }

// begin fits the memo to a solve: it starts over when the solve's dimensions or DaemonSets differ from the last.
func (m *Memo) begin(dims *Dims, daemonSets []*appsv1.DaemonSet) {
	if slices.Equal(m.dims, dims.names) && slices.Equal(m.daemonSets, daemonSets) {
		return
	}
	m.reset()
	m.dims = slices.Clone(dims.names)
	m.daemonSets = slices.Clone(daemonSets)
}

// preparedType returns the instance type prepared for the NodePool, from the memo when there is one.
func (s *solver) preparedType(p *poolInfo, it *cloudprovider.InstanceType) *itInfo {
	m := s.opts.Memo
	if m == nil {
		return s.prepareType(p, it)
	}
	key := memoTypeKey{pool: p.np, it: it}
	if info, ok := m.types[key]; ok {
		m.hits++
		return info
	}
	m.misses++
	info := s.prepareType(p, it)
	m.types[key] = info
	return info
}

// preparedNode returns an existing node's signature key (labels and taints) and allocatable vector.
func (s *solver) preparedNode(n *candidate) memoNode {
	m := s.opts.Memo
	if m != nil {
		if e, ok := m.nodes[n.existing]; ok {
			m.hits++
			return e
		}
		m.misses++
	}
	e := memoNode{staticKey: staticKey(n), alloc: s.dims.MustFromList(n.existing.Allocatable)}
	if m != nil {
		m.nodes[n.existing] = e
	}
	return e
}

// boundRequests returns the requests of a pod bound to an existing node. The vector is shared: callers only read it.
func (s *solver) boundRequests(pod *corev1.Pod) Vec {
	m := s.opts.Memo
	if m != nil {
		if e, ok := m.pods[pod]; ok {
			m.hits++
			if e.gen != m.gen {
				e.gen = m.gen
				m.pods[pod] = e
			}
			return e.requests
		}
		m.misses++
	}
	v := s.dims.MustFromList(PodRequests(pod))
	if m != nil {
		m.pods[pod] = memoPod{requests: v, gen: m.gen}
	}
	return v
}
