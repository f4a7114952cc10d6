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
}

// owner is the owner label: the path of the pod's first owner as a self link, as Karpenter writes it.
func (e *PodEntry) owner() string {
	if e.OwnerName == "" {
		return ""
	}
	return "/apis/" + e.OwnerAPIVersion + "/namespaces/" + e.Namespace + "/" + strings.ToLower(e.OwnerKind) + "s/" + e.OwnerName
}

// Pods is the per-pod collector: karpenter_pods_state, karpenter_pods_unbound_time_seconds and
// karpenter_pods_unstarted_time_seconds. It keeps one PodEntry a pod and makes the series when Prometheus
// scrapes, the two ages from the clock at that moment, so 20,000 pods cost 20,000 small entries and no update
// between scrapes.
type Pods struct {
	state, unbound, unstarted *prometheus.Desc
	// stateLayout orders the labels of karpenter_pods_state.
	stateLayout pairLayout
	now         func() time.Time
	mu          sync.Mutex
	pods        map[types.NamespacedName]*PodEntry
}

// NewPods returns the collector, empty; now is the clock of the ages.
func NewPods(now func() time.Time) *Pods {
	stateLabels := []string{LabelName, LabelNamespace, LabelOwner, LabelNode, LabelScheduled, LabelNodePool, LabelZone,
		LabelArch, LabelCapacityType, LabelInstanceType, LabelPhase, LabelReady, LabelManaged}
	return &Pods{
		state:       prometheus.NewDesc("karpenter_pods_state", helpOf("karpenter_pods_state"), stateLabels, nil),
		stateLayout: newLayout(stateLabels),
		unbound: prometheus.NewDesc("karpenter_pods_unbound_time_seconds", helpOf("karpenter_pods_unbound_time_seconds"),
			[]string{LabelName, LabelNamespace}, nil),
		unstarted: prometheus.NewDesc("karpenter_pods_unstarted_time_seconds", helpOf("karpenter_pods_unstarted_time_seconds"),
			[]string{LabelName, LabelNamespace}, nil),
		now:  now,
		pods: map[types.NamespacedName]*PodEntry{},
	}
}

// Set records the pod's entry, replacing the one before. The collector keeps e.
func (p *Pods) Set(e *PodEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = e
}

// Delete forgets a pod.
func (p *Pods) Delete(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, key)
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
	ch <- p.unbound
	ch <- p.unstarted
}

// Collect implements prometheus.Collector: pods in namespace and name order.
func (p *Pods) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	entries := make([]*PodEntry, 0, len(p.pods))
	for _, e := range p.pods {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Namespace != entries[j].Namespace {
			return entries[i].Namespace < entries[j].Namespace
		}
		return entries[i].Name < entries[j].Name
	})
	now := p.now()
	count := len(entries)
	for _, e := range entries {
		if unstarted(e) {
			count++
		}
		if unbound(e) {
			count++
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
	k := len(p.stateLayout.names)
	ptrs := make([]*dto.LabelPair, len(entries)*(k+2))
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
		// name, namespace: the pairs of karpenter_pods_state, already in name order.
		nameNamespace := ptrs[:2:2]
		nameNamespace[0], nameNamespace[1] = byIndex[0], byIndex[1]
		ptrs = ptrs[2:]
		age := now.Sub(e.Created).Seconds()
		if unstarted(e) {
			next(p.unstarted, nameNamespace, age)
		}
		if unbound(e) {
			next(p.unbound, nameNamespace, age)
		}
	}
}

// unstarted says whether a pod has a karpenter_pods_unstarted_time_seconds series: pending, or running and not
// ready.
func unstarted(e *PodEntry) bool { return e.Phase == "Pending" || (e.Phase == "Running" && !e.Ready) }

// unbound says whether a pod has a karpenter_pods_unbound_time_seconds series: pending and not bound.
func unbound(e *PodEntry) bool { return e.Phase == "Pending" && !e.Bound }

// CollectOthers sends the series WriteText does not write: none.
func (p *Pods) CollectOthers(chan<- prometheus.Metric) {}

// TextFamilies are the names of the families WriteText writes, in name order.
func (p *Pods) TextFamilies() []string {
	return []string{"karpenter_pods_state", "karpenter_pods_unbound_time_seconds", "karpenter_pods_unstarted_time_seconds"}
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
		has := unbound
		if family == "karpenter_pods_unstarted_time_seconds" {
			has = unstarted
		}
		entries = slices.DeleteFunc(entries, func(e *PodEntry) bool { return !has(e) })
		if len(entries) == 0 {
			return nil
		}
		slices.SortFunc(entries, func(a, b *PodEntry) int {
			return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
		})
		t.header(family, helpOf(family))
		for _, e := range entries {
			t.str(family)
			t.label('{', LabelName, e.Name)
			t.label(',', LabelNamespace, e.Namespace)
			t.byte('}')
			t.value(now.Sub(e.Created).Seconds())
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
