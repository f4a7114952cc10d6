package scheduling

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// Memo lets a series of solves over related snapshots reuse what each would otherwise prepare again: every
// NodePool's instance types as vectors with their DaemonSet overhead, every existing node's label and taint
// signature and allocatable, every bound pod's requests, what each node's bound pods add up to. The simulations
// of one disruption decision are such a series: the same NodePools, instance types and DaemonSets, each with a few
// nodes removed and their pods pending.
// Preparing those took ~85 % of a 600-node decision's CPU before.
//
// Entries are keyed by the objects' pointers, so an object must not change while a memo that has seen it is in use
// (Solve never modifies its snapshot; code that derives snapshots replaces the nodes and pods it changes). What
// depends on a solve's resource dimensions or DaemonSets is kept apart for each of the last memoSets combinations
// of them: a disruption pass alternates solves without NodePools (its drain checks) and with them (extra
// capacity, replacements), whose instance types bring more dimensions, and one memo for both started over at
// every turn (at 5,000 nodes, the requests of 50,000 bound pods added up again at each check). It is not safe for
// concurrent solves, and changes no plan: a solve with a memo returns what it returns without one.
type Memo struct {
	// sets are the entries of the last memoSets combinations of dimensions and DaemonSets, the latest first; cur
	// is the one of the solve under way (begin).
	sets []*memoSet
	cur  *memoSet
	anti map[*corev1.Pod]memoAnti
	// labelSets numbers the namespace and labels of bound pods (labelSetOf) for the nodePods entries of every set;
	// both are dropped at Prune.
	labelSets map[string]int32
	// extended are the extended resources (neither cpu, memory, pods nor ephemeral storage) of each existing
	// node's allocatable, which decide a solve's dimensions before any set is chosen; dropped at Prune.
	extended map[*StateNode][]corev1.ResourceName
	// gen counts Prunes; an entry's gen is the last one it was looked up in.
	gen uint64
	// hits and misses count lookups, for tests and benchmarks.
	hits, misses int
}

// memoSets is how many combinations of dimensions and DaemonSets a memo keeps entries for.
const memoSets = 4

// memoSet holds what was prepared under one combination of resource dimensions and DaemonSets.
type memoSet struct {
	dims       []corev1.ResourceName
	daemonSets []*appsv1.DaemonSet
	types      map[memoTypeKey]*itInfo
	nodes      map[*StateNode]memoNode
	nodePods   map[*StateNode]*boundPods
	pods       map[*corev1.Pod]memoPod
}

func newMemoSet(dims []corev1.ResourceName, daemonSets []*appsv1.DaemonSet) *memoSet {
	return &memoSet{dims: slices.Clone(dims), daemonSets: slices.Clone(daemonSets), types: map[memoTypeKey]*itInfo{},
		nodes: map[*StateNode]memoNode{}, nodePods: map[*StateNode]*boundPods{}, pods: map[*corev1.Pod]memoPod{}}
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
	m.sets, m.cur = nil, nil
	m.anti = map[*corev1.Pod]memoAnti{}
	m.labelSets = map[string]int32{}
	m.extended = map[*StateNode][]corev1.ResourceName{}
}

// Prune drops the pods the solves since the last Prune did not look up, and everything else: a memo kept from one
// provisioning pass to the next (bound pods are the informer cache's objects, the same pointers while unchanged)
// then holds the requests of the pods still bound, not of every pod it ever saw.
func (m *Memo) Prune() {
	for _, set := range m.sets {
		for p, e := range set.pods {
			if e.gen != m.gen {
				delete(set.pods, p)
			}
		}
		set.types = map[memoTypeKey]*itInfo{}
		set.nodes = map[*StateNode]memoNode{}
		set.nodePods = map[*StateNode]*boundPods{}
	}
	m.labelSets = map[string]int32{}
	m.extended = map[*StateNode][]corev1.ResourceName{}
	for p, e := range m.anti {
		if e.gen != m.gen {
			delete(m.anti, p)
		}
	}
	m.gen++
}

// Lookups returns how many lookups found an entry and how many did not.
func (m *Memo) Lookups() (hits, misses int) { return m.hits, m.misses }

// begin fits the memo to a solve: the entries kept for its dimensions and DaemonSets, new ones when there are none
// (the least recently used of memoSets combinations then goes).
func (m *Memo) begin(dims *Dims, daemonSets []*appsv1.DaemonSet) {
	i := slices.IndexFunc(m.sets, func(set *memoSet) bool {
		return slices.Equal(set.dims, dims.names) && slices.Equal(set.daemonSets, daemonSets)
	})
	var set *memoSet
	if i >= 0 {
		set = m.sets[i]
		m.sets = slices.Delete(m.sets, i, i+1)
	} else {
		set = newMemoSet(dims.names, daemonSets)
		if len(m.sets) >= memoSets {
			m.sets = m.sets[:memoSets-1]
		}
	}
	m.sets = slices.Insert(m.sets, 0, set)
	m.cur = set
}

// preparedType returns the instance type prepared for the NodePool, from the memo when there is one.
func (s *solver) preparedType(p *poolInfo, it *cloudprovider.InstanceType) *itInfo {
	m := s.opts.Memo
	if m == nil || m.cur == nil {
		return s.prepareType(p, it)
	}
	key := memoTypeKey{pool: p.np, it: it}
	if info, ok := m.cur.types[key]; ok {
		m.hits++
		return info
	}
	m.misses++
	info := s.prepareType(p, it)
	m.cur.types[key] = info
	return info
}

// preparedNode returns an existing node's signature key (labels and taints) and allocatable vector.
func (s *solver) preparedNode(n *candidate) memoNode {
	m := s.opts.Memo
	if m != nil && m.cur != nil {
		if e, ok := m.cur.nodes[n.existing]; ok {
			m.hits++
			return e
		}
		m.misses++
	}
	e := memoNode{staticKey: staticKey(n), alloc: s.dims.MustFromList(n.existing.Allocatable)}
	if m != nil && m.cur != nil {
		m.cur.nodes[n.existing] = e
	}
	return e
}

// boundRequests returns the requests of a pod bound to an existing node. The vector is shared: callers only read it.
func (s *solver) boundRequests(pod *corev1.Pod) Vec {
	m := s.opts.Memo
	if m != nil && m.cur != nil {
		if e, ok := m.cur.pods[pod]; ok {
			m.hits++
			if e.gen != m.gen {
				e.gen = m.gen
				m.cur.pods[pod] = e
			}
			return e.requests
		}
		m.misses++
	}
	v := s.dims.MustFromList(PodRequests(pod))
	if m != nil && m.cur != nil {
		m.cur.pods[pod] = memoPod{requests: v, gen: m.gen}
	}
	return v
}

// boundPods is what the pods bound to an existing node add up to: the room they take, their host ports and
// volumes, each one's label set (labelSetOf) and which of them have required anti-affinity terms. A disruption
// decision solves over the same nodes many times; adding up 35,000 bound pods again at each solve was a quarter of
// a 5,000-node decision.
type boundPods struct {
	// first and n identify the pod list it was made from: a node given another list (a pod added or removed by
	// code deriving a snapshot) is a new entry.
	first  **corev1.Pod
	n      int
	used   Vec
	ports  []hostPort
	vols   []volumeUse
	labels []int32 // by pod index, -1 for a nil pod; made when a solve has topology groups (podLabelSets)
	anti   []int   // indexes of the pods with required anti-affinity terms
}

// preparedPods returns what the node's bound pods add up to, from the memo when it has the node's current pod list.
// Callers only read it.
func (s *solver) preparedPods(sn *StateNode) *boundPods {
	var first **corev1.Pod
	if len(sn.Pods) > 0 {
		first = &sn.Pods[0]
	}
	m := s.opts.Memo
	if m != nil && m.cur != nil {
		if e, ok := m.cur.nodePods[sn]; ok && e.first == first && e.n == len(sn.Pods) {
			m.hits++
			return e
		}
		m.misses++
	}
	b := &boundPods{first: first, n: len(sn.Pods), used: s.dims.Zero()}
	seen := map[string]bool{}
	for i, pod := range sn.Pods {
		if pod == nil {
			continue
		}
		b.used.Add(s.boundRequests(pod))
		b.ports = append(b.ports, podHostPorts(pod)...)
		_, uses, _ := s.podVolumes(pod)
		for _, u := range uses {
			if !seen[u.id] {
				seen[u.id] = true
				b.vols = append(b.vols, u)
			}
		}
		if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			b.anti = append(b.anti, i)
		}
	}
	b.ports = slices.Clip(b.ports)
	if m != nil && m.cur != nil {
		m.cur.nodePods[sn] = b
	}
	return b
}

// podLabelSets returns the label sets (labelSetOf) of the node's bound pods by pod index.
func (s *solver) podLabelSets(sn *StateNode, b *boundPods) []int32 {
	if b.labels == nil {
		b.labels = make([]int32, len(sn.Pods))
		for i, pod := range sn.Pods {
			b.labels[i] = -1
			if pod != nil {
				b.labels[i] = s.labelSetOf(pod)
			}
		}
	}
	return b.labels
}

// labelSetOf numbers a pod's namespace and labels: pods with the same number match the same group selectors, so
// countExistingPods asks each group once a label set rather than once a pod (the pods of one ReplicaSet share one).
func (s *solver) labelSetOf(pod *corev1.Pod) int32 {
	var table map[string]int32
	if m := s.opts.Memo; m != nil {
		table = m.labelSets
	} else {
		if s.labelSets == nil {
			s.labelSets = map[string]int32{}
		}
		table = s.labelSets
	}
	keys := s.keyBuf[:0]
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := append(s.setBuf[:0], pod.Namespace...)
	for _, k := range keys {
		b = append(b, 0)
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, pod.Labels[k]...)
	}
	s.keyBuf, s.setBuf = keys[:0], b
	id, ok := table[string(b)] // no copy of the key to look it up
	if !ok {
		id = int32(len(table))
		table[string(b)] = id
	}
	return id
}
