package metrics

import (
	"bufio"
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
)

// Labels of karpenter_pods_state (besides nodepool, zone, arch, capacity_type, instance_type, phase, managed).
const (
	LabelName      = "name"
	LabelNamespace = "namespace"
	LabelOwner     = "owner"
	LabelNode      = "node"
	LabelScheduled = "scheduled"
	LabelReady     = "ready"
)

// PodEntry is one pod's entry in the per-pod series. The strings are the cached pod's and node's own, not copies.
type PodEntry struct {
	Name, Namespace string
	// OwnerAPIVersion, OwnerKind and OwnerName are the pod's first owner reference (empty without one).
	OwnerAPIVersion, OwnerKind, OwnerName string
	// Node is spec.nodeName; NodePool, Zone, Arch, CapacityType and InstanceType are that Node's labels.
	Node, NodePool, Zone, Arch, CapacityType, InstanceType string
	Phase                                                  string
	Ready                                                  bool
	// Created is the pod's creation time; Bound says whether its PodScheduled condition is True.
	Created time.Time
	Bound   bool
	// UID tells the pod from a later one of the same name (for its scheduling moments).
	UID types.UID
	// DynamicResources says whether the pod asks for dynamic resource allocation (resource claims).
	DynamicResources bool
}

// owner is the owner label: the path of the pod's first owner as a self link, as Karpenter writes it.
func (e *PodEntry) owner() string {
	if e.OwnerName == "" {
		return ""
	}
	return "/apis/" + e.OwnerAPIVersion + "/namespaces/" + e.Namespace + "/" + strings.ToLower(e.OwnerKind) + "s/" + e.OwnerName
}

// LabelDynamicResources is "true" when a pod asks for dynamic resource allocation (resource claims).
const LabelDynamicResources = "dynamic_resources"

// podAge is a per-pod gauge of an age in seconds, labelled with the pod's name and namespace (and whether it asks
// for dynamic resources when dynamic is set); age says whether the pod has a series and its value.
type podAge struct {
	name    string
	dynamic bool
	age     func(e *PodEntry, t *PodTimes, now time.Time) (float64, bool)
}

// podAges are the per-pod age gauges in name order. t is the pod's scheduling moments, nil when it has none.
var podAges = []podAge{
	{"karpenter_pods_provisioning_scheduling_undecided_time_seconds", false, func(e *PodEntry, t *PodTimes, now time.Time) (float64, bool) {
		// Seen by the provisioner, not decided on by a pass, and still waiting for a node.
		if t == nil || t.Acked.IsZero() || !t.Decided.IsZero() || e.Bound || e.Node != "" || terminal(e) {
			return 0, false
		}
		return now.Sub(t.Acked).Seconds(), true
	}},
	{"karpenter_pods_provisioning_unbound_time_seconds", true, func(e *PodEntry, t *PodTimes, now time.Time) (float64, bool) {
		if t == nil || t.Schedulable.IsZero() || !unbound(e) {
			return 0, false
		}
		return now.Sub(t.Schedulable).Seconds(), true
	}},
	{"karpenter_pods_provisioning_unstarted_time_seconds", false, func(e *PodEntry, t *PodTimes, now time.Time) (float64, bool) {
		if t == nil || t.Schedulable.IsZero() || !unstarted(e) {
			return 0, false
		}
		return now.Sub(t.Schedulable).Seconds(), true
	}},
	{"karpenter_pods_unbound_time_seconds", true, func(e *PodEntry, _ *PodTimes, now time.Time) (float64, bool) {
		return now.Sub(e.Created).Seconds(), unbound(e)
	}},
	{"karpenter_pods_unstarted_time_seconds", false, func(e *PodEntry, _ *PodTimes, now time.Time) (float64, bool) {
		return now.Sub(e.Created).Seconds(), unstarted(e)
	}},
}

// Pods is the per-pod collector: karpenter_pods_state and the per-pod ages (podAges). It keeps one PodEntry a pod,
// and the pods' scheduling moments in Times, and makes the series when Prometheus scrapes, the ages from the clock
// at that moment, so 20,000 pods cost 20,000 small entries and no update between scrapes.
type Pods struct {
	state *prometheus.Desc
	// ages are the Descs of podAges, in that order.
	ages []*prometheus.Desc
	// stateLayout orders the labels of karpenter_pods_state.
	stateLayout pairLayout
	now         func() time.Time
	// Times are the moments the provisioner records for pending pods; the pod metrics controller forgets them.
	Times *PodSchedulingTimes
	mu    sync.Mutex
	pods  map[types.NamespacedName]*PodEntry
}

// NewPods returns the collector, empty; now is the clock of the ages.
func NewPods(now func() time.Time) *Pods {
	stateLabels := []string{LabelName, LabelNamespace, LabelOwner, LabelNode, LabelScheduled, LabelNodePool, LabelZone,
		LabelArch, LabelCapacityType, LabelInstanceType, LabelPhase, LabelReady, LabelManaged}
	p := &Pods{
		state:       prometheus.NewDesc("karpenter_pods_state", helpOf("karpenter_pods_state"), stateLabels, nil),
		stateLayout: newLayout(stateLabels),
		now:         now,
		Times:       NewPodSchedulingTimes(),
		pods:        map[types.NamespacedName]*PodEntry{},
	}
	for _, a := range podAges {
		labels := []string{LabelName, LabelNamespace}
		if a.dynamic {
			labels = append(labels, LabelDynamicResources)
		}
		p.ages = append(p.ages, prometheus.NewDesc(a.name, helpOf(a.name), labels, nil))
	}
	return p
}

// Set records the pod's entry, replacing the one before. The collector keeps e.
func (p *Pods) Set(e *PodEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = e
}

// Delete forgets a pod, and its scheduling moments.
func (p *Pods) Delete(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.pods, key)
	p.mu.Unlock()
	p.Times.Forget(key)
}

// Len is the number of pods recorded.
func (p *Pods) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pods)
}

// Describe implements prometheus.Collector.
func (p *Pods) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.state
	for _, d := range p.ages {
		ch <- d
	}
}

// timesOf returns the pod's scheduling moments in times, nil when it has none (or a pod of another UID has).
func timesOf(times map[types.NamespacedName]PodTimes, e *PodEntry) *PodTimes {
	if len(times) == 0 {
		return nil
	}
	t, ok := times[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}]
	if !ok || t.UID != e.UID {
		return nil
	}
	return &t
}

// Collect implements prometheus.Collector: pods in namespace and name order.
func (p *Pods) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	entries := make([]*PodEntry, 0, len(p.pods))
	for _, e := range p.pods {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	times := p.Times.snapshot()
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Namespace != entries[j].Namespace {
			return entries[i].Namespace < entries[j].Namespace
		}
		return entries[i].Name < entries[j].Name
	})
	now := p.now()
	count := len(entries)
	for _, e := range entries {
		t := timesOf(times, e)
		for _, a := range podAges {
			if _, ok := a.age(e, t, now); ok {
				count++
			}
		}
	}
	// The pairs of a scrape: name and namespace are the entry's own strings, the other values shared by the pods
	// that have them (a handful of nodes, node pools, zones and owners for thousands of pods).
	out := make([]gaugeSeries, count)
	next := func(desc *prometheus.Desc, labels []*dto.LabelPair, value float64) {
		g := &out[0]
		out = out[1:]
		g.desc, g.labels, g.value = desc, labels, value
		ch <- g
	}
	pool := newPairPool(&p.stateLayout)
	dynamicName, trueValue, falseValue := LabelDynamicResources, "true", "false"
	dynamic := map[bool]*dto.LabelPair{true: {Name: &dynamicName, Value: &trueValue}, false: {Name: &dynamicName, Value: &falseValue}}
	k := len(p.stateLayout.names)
	ptrs := make([]*dto.LabelPair, len(entries)*(k+5))
	byIndex := make([]*dto.LabelPair, k)
	for _, e := range entries {
		byIndex[0] = pool.at(0, &e.Name)
		byIndex[1] = pool.at(1, &e.Namespace)
		for i, v := range []string{e.owner(), e.Node, strconv.FormatBool(e.Node != ""), e.NodePool, e.Zone, e.Arch,
			e.CapacityType, e.InstanceType, e.Phase, strconv.FormatBool(e.Ready), strconv.FormatBool(e.NodePool != "")} {
			byIndex[2+i] = pool.shared(2+i, v)
		}
		next(p.state, p.stateLayout.sorted(ptrs[:k:k], byIndex), 1)
		ptrs = ptrs[k:]
		// name, namespace: the pairs of karpenter_pods_state, already in name order; dynamic_resources sorts first.
		nameNamespace := ptrs[:2:2]
		nameNamespace[0], nameNamespace[1] = byIndex[0], byIndex[1]
		withDynamic := ptrs[2:5:5]
		withDynamic[0], withDynamic[1], withDynamic[2] = dynamic[e.DynamicResources], byIndex[0], byIndex[1]
		ptrs = ptrs[5:]
		t := timesOf(times, e)
		for i, a := range podAges {
			if v, ok := a.age(e, t, now); ok {
				if a.dynamic {
					next(p.ages[i], withDynamic, v)
				} else {
					next(p.ages[i], nameNamespace, v)
				}
			}
		}
	}
}

// unstarted says whether a pod has a karpenter_pods_unstarted_time_seconds series: pending, or running and not
// ready.
func unstarted(e *PodEntry) bool { return e.Phase == "Pending" || (e.Phase == "Running" && !e.Ready) }

// unbound says whether a pod has a karpenter_pods_unbound_time_seconds series: pending and not bound.
func unbound(e *PodEntry) bool { return e.Phase == "Pending" && !e.Bound }

// terminal says whether a pod's phase is Succeeded or Failed.
func terminal(e *PodEntry) bool { return e.Phase == "Succeeded" || e.Phase == "Failed" }

// CollectOthers sends the series WriteText does not write: none.
func (p *Pods) CollectOthers(chan<- prometheus.Metric) {}

// TextFamilies are the names of the families WriteText writes, in name order.
func (p *Pods) TextFamilies() []string {
	names := make([]string, 0, len(podAges)+1)
	for _, a := range podAges[:3] {
		names = append(names, a.name)
	}
	names = append(names, "karpenter_pods_state")
	for _, a := range podAges[3:] {
		names = append(names, a.name)
	}
	return names
}

// WriteText writes family (one of TextFamilies) as text exposition; nothing when it has no series.
func (p *Pods) WriteText(w *bufio.Writer, family string) error {
	p.mu.Lock()
	entries := make([]*PodEntry, 0, len(p.pods))
	for _, e := range p.pods {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	now := p.now()
	t := &textWriter{w: w}
	if family != "karpenter_pods_state" {
		i := slices.IndexFunc(podAges, func(a podAge) bool { return a.name == family })
		if i < 0 {
			return nil
		}
		a := podAges[i]
		times := p.Times.snapshot()
		type aged struct {
			e *PodEntry
			v float64
		}
		var series []aged
		for _, e := range entries {
			if v, ok := a.age(e, timesOf(times, e), now); ok {
				series = append(series, aged{e, v})
			}
		}
		if len(series) == 0 {
			return nil
		}
		slices.SortFunc(series, func(x, y aged) int {
			if a.dynamic && x.e.DynamicResources != y.e.DynamicResources {
				return cmp.Compare(boolLabel(x.e.DynamicResources), boolLabel(y.e.DynamicResources))
			}
			return cmp.Or(strings.Compare(x.e.Name, y.e.Name), strings.Compare(x.e.Namespace, y.e.Namespace))
		})
		t.header(family, helpOf(family))
		for _, s := range series {
			t.str(family)
			sep := byte('{')
			if a.dynamic {
				t.label(sep, LabelDynamicResources, boolLabel(s.e.DynamicResources))
				sep = ','
			}
			t.label(sep, LabelName, s.e.Name)
			t.label(',', LabelNamespace, s.e.Namespace)
			t.byte('}')
			t.value(s.v)
		}
		return t.err
	}
	if len(entries) == 0 {
		return nil
	}
	// The exposition's order: by the label values in label name order; name and namespace decide at the latest.
	slices.SortFunc(entries, func(a, b *PodEntry) int {
		return cmp.Or(strings.Compare(a.Arch, b.Arch), strings.Compare(a.CapacityType, b.CapacityType),
			strings.Compare(a.InstanceType, b.InstanceType), cmp.Compare(boolLabel(a.NodePool != ""), boolLabel(b.NodePool != "")),
			strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	t.header(family, helpOf(family))
	kinds := map[string]string{}
	for _, e := range entries {
		t.str(family)
		t.label('{', LabelArch, e.Arch)
		t.label(',', LabelCapacityType, e.CapacityType)
		t.label(',', LabelInstanceType, e.InstanceType)
		t.label(',', LabelManaged, boolLabel(e.NodePool != ""))
		t.label(',', LabelName, e.Name)
		t.label(',', LabelNamespace, e.Namespace)
		t.label(',', LabelNode, e.Node)
		t.label(',', LabelNodePool, e.NodePool)
		// owner, as owner() spells it, without building the string.
		t.str("," + LabelOwner + `="`)
		if e.OwnerName != "" {
			kind, ok := kinds[e.OwnerKind]
			if !ok {
				kind = strings.ToLower(e.OwnerKind)
				kinds[e.OwnerKind] = kind
			}
			t.str("/apis/")
			t.escaped(e.OwnerAPIVersion, true)
			t.str("/namespaces/")
			t.escaped(e.Namespace, true)
			t.byte('/')
			t.escaped(kind, true)
			t.str("s/")
			t.escaped(e.OwnerName, true)
		}
		t.byte('"')
		t.label(',', LabelPhase, e.Phase)
		t.label(',', LabelReady, boolLabel(e.Ready))
		t.label(',', LabelScheduled, boolLabel(e.Node != ""))
		t.label(',', LabelZone, e.Zone)
		t.byte('}')
		t.value(1)
	}
	return t.err
}

// boolLabel is a bool as a label value.
func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
