package operator

import (
	"encoding/binary"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// internLimit bounds each table of an interner: past it the table starts again empty. Values handed out before
// stay shared; only later objects stop sharing with them.
const internLimit = 16384

// interner hands the informer caches one shared copy of values that many objects hold alike: the pods of a
// Deployment have the same labels, owner, requests, tolerations and spread constraints, and 11,000 pods decoded
// one by one hold 11,000 copies of each. The cache's objects are read only (a client's Get and List copy them,
// and the readers of UnsafeDisableDeepCopy lists never change them), so sharing a map or slice between them is
// as safe as sharing the object itself. An interner is safe for concurrent use (each informer transforms on its
// own goroutine).
type interner struct {
	mu          sync.Mutex
	key         []byte
	strings     table[string]
	stringMaps  table[map[string]string]
	resources   table[corev1.ResourceList]
	owners      table[[]metav1.OwnerReference]
	tolerations table[[]corev1.Toleration]
	spreads     table[[]corev1.TopologySpreadConstraint]
	affinities  table[*corev1.Affinity]
	containers  table[[]corev1.Container]
	taints      table[[]corev1.Taint]
	reqs        table[[]karpv1.NodeSelectorRequirementWithMinValues]
	classRefs   table[*karpv1.NodeClassReference]
}

func newInterner() *interner {
	return &interner{}
}

// table maps a value's encoding to the shared copy of the value.
type table[T any] struct{ m map[string]T }

// get returns the value stored under key, or stores v under it and returns v.
func (t *table[T]) get(key []byte, v T) T {
	if got, ok := t.m[string(key)]; ok {
		return got
	}
	if t.m == nil || len(t.m) >= internLimit {
		t.m = make(map[string]T)
	}
	t.m[string(key)] = v
	return v
}

// protoMessage is what the generated Kubernetes types offer to encode themselves; the encoding is deterministic
// (map keys sorted), so equal values have equal encodings.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendProto appends m's length and encoding to in.key.
func (in *interner) appendProto(m protoMessage) bool {
	n := m.Size()
	in.key = binary.AppendUvarint(in.key, uint64(n))
	start := len(in.key)
	in.key = slices.Grow(in.key, n)[:start+n]
	_, err := m.MarshalToSizedBuffer(in.key[start:])
	return err == nil
}

func (in *interner) appendString(s string) {
	in.key = binary.AppendUvarint(in.key, uint64(len(s)))
	in.key = append(in.key, s...)
}

// pod shares p's repeated values with the pods interned before it.
func (in *interner) pod(p *corev1.Pod) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.meta(&p.ObjectMeta, true)
	s := &p.Spec
	s.InitContainers = in.containerList(s.InitContainers)
	s.Containers = in.containerList(s.Containers)
	s.Overhead = in.resourceList(s.Overhead)
	s.NodeSelector = in.stringMap(s.NodeSelector)
	s.NodeName = in.string(s.NodeName)
	s.SchedulerName = in.string(s.SchedulerName)
	s.ServiceAccountName = in.string(s.ServiceAccountName)
	s.DeprecatedServiceAccount = in.string(s.DeprecatedServiceAccount)
	s.PriorityClassName = in.string(s.PriorityClassName)
	s.DNSPolicy = corev1.DNSPolicy(in.string(string(s.DNSPolicy)))
	s.RestartPolicy = corev1.RestartPolicy(in.string(string(s.RestartPolicy)))
	s.Tolerations = internList(in, &in.tolerations, s.Tolerations)
	s.TopologySpreadConstraints = internList(in, &in.spreads, s.TopologySpreadConstraints)
	if s.Affinity != nil {
		in.key = in.key[:0]
		if in.appendProto(s.Affinity) {
			s.Affinity = in.affinities.get(in.key, s.Affinity)
		}
	}
	st := &p.Status
	st.Phase = corev1.PodPhase(in.string(string(st.Phase)))
	st.NominatedNodeName = in.string(st.NominatedNodeName)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type = corev1.PodConditionType(in.string(string(c.Type)))
		c.Status = corev1.ConditionStatus(in.string(string(c.Status)))
		c.Reason = in.string(c.Reason)
	}
	for _, cs := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range cs {
			cs[i].Name = in.string(cs[i].Name)
		}
	}
}

// containerList returns the shared list equal to cs, the containers as TransformForCache trims them (the
// replicas of a workload have the same), after sharing their names and resources.
func (in *interner) containerList(cs []corev1.Container) []corev1.Container {
	for i := range cs {
		cs[i].Name = in.string(cs[i].Name)
		cs[i].Resources.Requests = in.resourceList(cs[i].Resources.Requests)
		cs[i].Resources.Limits = in.resourceList(cs[i].Resources.Limits)
	}
	return internList(in, &in.containers, cs)
}

// node shares n's capacity and allocatable with the nodes interned before it (nodes of one instance type have
// the same), and its label keys and values.
func (in *interner) node(n *corev1.Node) {
	in.mu.Lock()
	defer in.mu.Unlock()
	n.Status.Capacity = in.resourceList(n.Status.Capacity)
	n.Status.Allocatable = in.resourceList(n.Status.Allocatable)
	// Not the annotations: a node's are its own (addresses, volumes attached), and a table entry for a value met
	// once holds it twice.
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type, c.Status = corev1.NodeConditionType(in.string(string(c.Type))), corev1.ConditionStatus(in.string(string(c.Status)))
		c.Reason, c.Message = in.string(c.Reason), in.string(c.Message)
	}
	info := &n.Status.NodeInfo
	info.KernelVersion, info.OSImage, info.ContainerRuntimeVersion = in.string(info.KernelVersion), in.string(info.OSImage), in.string(info.ContainerRuntimeVersion)
	info.KubeletVersion, info.KubeProxyVersion = in.string(info.KubeletVersion), in.string(info.KubeProxyVersion)
	info.OperatingSystem, info.Architecture = in.string(info.OperatingSystem), in.string(info.Architecture)
	if len(n.Labels) > 0 {
		labels := make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			labels[in.string(k)] = in.string(v)
		}
		n.Labels = labels
	}
}

// nodeClaim shares what NodeClaims of one NodePool and offering hold alike: labels, annotations, owner,
// requirements, taints, node class reference, requests, capacity and allocatable, condition texts.
func (in *interner) nodeClaim(nc *karpv1.NodeClaim) {
	in.mu.Lock()
	defer in.mu.Unlock()
	// Not the annotations: each NodeClaim's list of planned pods (dovetail.sh/planned-pods) is its own.
	in.meta(&nc.ObjectMeta, false)
	s := &nc.Spec
	s.Taints = in.taintList(s.Taints)
	s.StartupTaints = in.taintList(s.StartupTaints)
	if len(s.Requirements) > 0 {
		in.key = in.key[:0]
		ok := true
		for i := range s.Requirements {
			r := &s.Requirements[i]
			ok = ok && in.appendProto(&r.NodeSelectorRequirement)
			if r.MinValues != nil {
				in.key = binary.AppendVarint(in.key, int64(*r.MinValues))
			} else {
				in.key = append(in.key, 0xff)
			}
		}
		if ok {
			s.Requirements = in.reqs.get(in.key, s.Requirements)
		}
	}
	s.Resources.Requests = in.resourceList(s.Resources.Requests)
	if r := s.NodeClassRef; r != nil {
		in.key = in.key[:0]
		in.appendString(r.Group)
		in.appendString(r.Kind)
		in.appendString(r.Name)
		s.NodeClassRef = in.classRefs.get(in.key, r)
	}
	st := &nc.Status
	st.ImageID = in.string(st.ImageID)
	st.Capacity = in.resourceList(st.Capacity)
	st.Allocatable = in.resourceList(st.Allocatable)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status = in.string(c.Type), metav1.ConditionStatus(in.string(string(c.Status)))
		c.Reason, c.Message = in.string(c.Reason), in.string(c.Message)
	}
}

func (in *interner) taintList(ts []corev1.Taint) []corev1.Taint {
	if len(ts) == 0 {
		return ts
	}
	in.key = in.key[:0]
	for i := range ts {
		if ts[i].TimeAdded != nil || !in.appendProto(&ts[i]) {
			return ts
		}
	}
	return in.taints.get(in.key, ts)
}

// internList returns the shared list equal to l (an empty list as it is): its elements' encodings are the key.
func internList[T any, P interface {
	*T
	protoMessage
}](in *interner, t *table[[]T], l []T) []T {
	if len(l) == 0 {
		return l
	}
	in.key = in.key[:0]
	for i := range l {
		if !in.appendProto(P(&l[i])) {
			return l
		}
	}
	return t.get(in.key, l)
}

// meta shares the namespace, labels, owner references and, when annotations is set, the annotations.
func (in *interner) meta(m *metav1.ObjectMeta, annotations bool) {
	m.Namespace = in.string(m.Namespace)
	m.GenerateName = in.string(m.GenerateName)
	m.Labels = in.stringMap(m.Labels)
	if annotations {
		m.Annotations = in.stringMap(m.Annotations)
	}
	m.OwnerReferences = internList(in, &in.owners, m.OwnerReferences)
}

func (in *interner) string(s string) string {
	if s == "" {
		return s
	}
	// Keyed by the string itself: a copy of it as the key would hold a string met once twice.
	t := &in.strings
	if got, ok := t.m[s]; ok {
		return got
	}
	if t.m == nil || len(t.m) >= internLimit {
		t.m = make(map[string]string)
	}
	t.m[s] = s
	return s
}

// stringMap returns the shared map equal to m (nil and empty maps are returned as they are, so that an empty
// map stays distinct from none).
func (in *interner) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	in.key = in.key[:0]
	for _, k := range keys {
		in.appendString(k)
		in.appendString(m[k])
	}
	return in.stringMaps.get(in.key, m)
}

// resourceList returns the shared list equal to l: the same names with quantities of the same value and format
// (so they print alike). A list holding a quantity finer than a thousandth is left alone.
func (in *interner) resourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	sort.Strings(names)
	in.key = in.key[:0]
	for _, name := range names {
		q := l[corev1.ResourceName(name)]
		milli := q.MilliValue()
		if resource.NewMilliQuantity(milli, q.Format).Cmp(q) != 0 {
			return l
		}
		in.appendString(name)
		in.appendString(string(q.Format))
		in.key = binary.AppendVarint(in.key, milli)
	}
	return in.resources.get(in.key, l)
}
