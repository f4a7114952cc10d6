package metrics

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// slowCollector makes the series of a Nodes and a Pods collector from their entries with
// prometheus.MustNewConstMetric, the label pairs built and sorted by client_golang: the exposition the prebuilt
// pairs must reproduce.
type slowCollector struct {
	nodes *Nodes
	pods  *Pods
}

func (s slowCollector) Describe(ch chan<- *prometheus.Desc) {
	s.nodes.Describe(ch)
	s.pods.Describe(ch)
}

func (s slowCollector) Collect(ch chan<- prometheus.Metric) {
	n := s.nodes
	n.mu.Lock()
	nodes := n.nodes
	n.mu.Unlock()
	now := n.now()
	allocatable, requested := map[string]float64{}, map[string]float64{}
	for i := range nodes {
		e := &nodes[i]
		labels := append([]string(nil), e.Labels...)
		ch <- prometheus.MustNewConstMetric(n.lifetime, prometheus.GaugeValue, now.Sub(e.Created).Seconds(), labels...)
		for _, f := range []struct {
			desc *prometheus.Desc
			rs   []ResourceValue
		}{{n.allocatable, e.Allocatable}, {n.podRequests, e.PodRequests}, {n.podLimits, e.PodLimits},
			{n.daemonRequests, e.DaemonRequests}, {n.daemonLimits, e.DaemonLimits}, {n.overhead, e.Overhead}} {
			for _, r := range f.rs {
				ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, r.Value, append(labels, ResourceLabel(r.Name))...)
			}
		}
		for _, r := range e.Allocatable {
			allocatable[ResourceLabel(r.Name)] += r.Value
		}
		for _, r := range e.PodRequests {
			requested[ResourceLabel(r.Name)] += r.Value
		}
	}
	for name, total := range allocatable {
		if total != 0 {
			ch <- prometheus.MustNewConstMetric(n.utilization, prometheus.GaugeValue, 100*requested[name]/total, name)
		}
	}
	ch <- prometheus.MustNewConstMetric(n.nodeCount, prometheus.GaugeValue, float64(len(nodes)))
	p := s.pods
	p.mu.Lock()
	pods := make([]*PodEntry, 0, len(p.pods))
	for _, e := range p.pods {
		pods = append(pods, e)
	}
	p.mu.Unlock()
	now = p.now()
	for _, e := range pods {
		ch <- prometheus.MustNewConstMetric(p.state, prometheus.GaugeValue, 1, e.Name, e.Namespace, e.owner(), e.Node,
			strconv.FormatBool(e.Node != ""), e.NodePool, e.Zone, e.Arch, e.CapacityType, e.InstanceType, e.Phase,
			strconv.FormatBool(e.Ready), strconv.FormatBool(e.NodePool != ""))
		var times *PodTimes
		if t, ok := p.Times.Get(types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, e.UID); ok {
			times = &t
		}
		for i, a := range podAges {
			v, ok := a.age(e, times, now)
			if !ok {
				continue
			}
			labels := []string{e.Name, e.Namespace}
			if a.dynamic {
				labels = append(labels, strconv.FormatBool(e.DynamicResources))
			}
			ch <- prometheus.MustNewConstMetric(p.ages[i], prometheus.GaugeValue, v, labels...)
		}
	}
}

// gatherText gathers c on a pedantic registry and returns the families and their text exposition.
func gatherText(t *testing.T, c prometheus.Collector) ([]*dto.MetricFamily, string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	return families, buf.String()
}

// tricky are label values the text exposition must escape, and others.
var tricky = []string{"", "a", `quo"te`, `back\slash`, "new\nline", `\"` + "\n", "ünïcode", "m5.xlarge", "us-west-2a"}

func randomValue(r *rand.Rand) string { return tricky[r.IntN(len(tricky))] }

// randomNodes returns n node entries with random label values (escaping needed in some) and resources.
func randomNodes(r *rand.Rand, n int, created time.Time) []NodeEntry {
	resources := []string{"cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi"}
	entries := make([]NodeEntry, 0, n)
	for i := range n {
		labels := make([]string, 0, len(NodeLabelKeys)+3)
		for range NodeLabelKeys {
			labels = append(labels, randomValue(r))
		}
		labels = append(labels, fmt.Sprintf("node-%d%s", i, randomValue(r)), []string{"Running", "Pending", ""}[r.IntN(3)],
			strconv.FormatBool(r.IntN(2) == 0))
		rs := func() []ResourceValue {
			var out []ResourceValue
			for _, name := range resources {
				if r.IntN(3) > 0 {
					out = append(out, ResourceValue{name, float64(r.IntN(100000)) / 7})
				}
			}
			return out
		}
		entries = append(entries, NodeEntry{Labels: labels, Created: created.Add(-time.Duration(r.IntN(1e6)) * time.Second),
			Allocatable: rs(), Overhead: rs(), PodRequests: rs(), PodLimits: rs(), DaemonRequests: rs(), DaemonLimits: rs()})
	}
	return entries
}

// randomPod returns a pod entry with random values.
func randomPod(r *rand.Rand, i int, created time.Time) *PodEntry {
	e := &PodEntry{Name: fmt.Sprintf("pod-%d%s", i, randomValue(r)), Namespace: randomValue(r) + "ns",
		Node: randomValue(r), NodePool: randomValue(r), Zone: randomValue(r), Arch: randomValue(r), CapacityType: randomValue(r),
		InstanceType: randomValue(r), Phase: []string{"Pending", "Running", "Succeeded"}[r.IntN(3)], Ready: r.IntN(2) == 0,
		Created: created.Add(-time.Duration(r.IntN(1e4)) * time.Second), Bound: r.IntN(2) == 0}
	if r.IntN(3) > 0 {
		e.OwnerAPIVersion, e.OwnerKind, e.OwnerName = "apps/v1", "ReplicaSet", "rs"+randomValue(r)
	}
	e.UID, e.DynamicResources = types.UID(fmt.Sprintf("uid-%d", r.IntN(1e6))), r.IntN(4) == 0
	return e
}

// setRandomPod records e in pods with scheduling moments of its own or of another UID, or none.
func setRandomPod(r *rand.Rand, pods *Pods, e *PodEntry, now time.Time) {
	pods.Set(e)
	key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
	uid := e.UID
	switch r.IntN(5) {
	case 0:
		pods.Times.Forget(key)
		return
	case 1:
		uid = "another"
	}
	pods.Times.Ack(key, uid, now.Add(-time.Duration(r.IntN(600))*time.Second))
	if r.IntN(3) > 0 {
		pods.Times.Decide(key, uid, now.Add(-time.Duration(r.IntN(300))*time.Second), r.IntN(3) > 0)
	}
}

// TestExpositionMatchesConstMetrics: the series the collectors make gather to the same families, and encode to
// the same text, as those made with MustNewConstMetric, and the text the metrics handler writes from the entries
// is that text, for random nodes and pods with label values that need escaping, and again after nodes and pods are
// added, changed and removed between scrapes.
func TestExpositionMatchesConstMetrics(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r := rand.New(rand.NewPCG(1, 2))
	nodes, pods := NewNodes(clock), NewPods(clock)
	compare := func(step string) {
		t.Helper()
		fast, fastText := gatherText(t, collectors{nodes, pods})
		slow, slowText := gatherText(t, slowCollector{nodes, pods})
		if !familiesEqual(slow, fast) {
			t.Fatalf("%s: families differ from MustNewConstMetric's (-want +got):\n%s", step, cmp.Diff(slow, fast, protocmp.Transform()))
		}
		if fastText != slowText {
			t.Fatalf("%s: text differs from MustNewConstMetric's", step)
		}
		reg := NewRegistry()
		reg.MustRegister(nodes, pods)
		if got := exposition(t, reg); got != slowText {
			t.Fatalf("%s: text written from the entries differs from MustNewConstMetric's (-want +got):\n%s", step, cmp.Diff(slowText, got))
		}
		gathered, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if !familiesEqual(slow, gathered) {
			t.Fatalf("%s: Registry.Gather differs from MustNewConstMetric's (-want +got):\n%s", step, cmp.Diff(slow, gathered, protocmp.Transform()))
		}
	}
	compare("empty")
	entries := randomNodes(r, 40, now)
	nodes.Replace(entries)
	var keys []types.NamespacedName
	for i := range 300 {
		e := randomPod(r, i, now)
		setRandomPod(r, pods, e, now)
		keys = append(keys, types.NamespacedName{Namespace: e.Namespace, Name: e.Name})
	}
	compare("filled")

	// Changed: some nodes get other label values, others other resources; one is removed, some are added.
	next := make([]NodeEntry, 0, len(entries)+5)
	for i, e := range entries {
		switch {
		case i == 3:
			continue
		case i%5 == 0:
			labels := append([]string(nil), e.Labels...)
			labels[r.IntN(len(NodeLabelKeys))] = fmt.Sprintf("changed-%d\n", i)
			labels[len(NodeLabelKeys)+1] = "Running"
			e.Labels = labels
		case i%5 == 1:
			e.Allocatable = append(append([]ResourceValue(nil), e.Allocatable...), ResourceValue{"example.com/Widget-X", 3})
			e.PodRequests = nil
		}
		next = append(next, e)
	}
	next = append(next, randomNodes(r, 45, now)[40:]...)
	nodes.Replace(next)
	for i := range 300 {
		switch i % 4 {
		case 0:
			pods.Delete(keys[i])
		case 1:
			setRandomPod(r, pods, randomPod(r, 1000+i, now), now)
		case 2:
			e := randomPod(r, 0, now)
			e.Name, e.Namespace = keys[i].Name, keys[i].Namespace
			setRandomPod(r, pods, e, now)
		}
	}
	now = now.Add(time.Minute)
	compare("changed")

	nodes.Replace(nil)
	compare("no nodes")
}

// familiesEqual says whether a and b are the same families (cmp.Diff with protocmp explains a difference, slowly).
func familiesEqual(a, b []*dto.MetricFamily) bool {
	return slices.EqualFunc(a, b, func(x, y *dto.MetricFamily) bool { return proto.Equal(x, y) })
}

// collectors is several collectors registered as one.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

// TestNodesKeepText: a node whose label values are unchanged keeps its labels' text across Replace; one whose
// values changed gets it built anew; a removed node's is dropped.
func TestNodesKeepText(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	n := NewNodes(func() time.Time { return now })
	entries := randomNodes(rand.New(rand.NewPCG(3, 4)), 3, now)
	n.Replace(entries)
	first := map[string]*nodeText{}
	for k, v := range n.byName {
		first[k] = v
	}
	again := []NodeEntry{entries[0], entries[2]}
	again[0].Labels = append([]string(nil), entries[0].Labels...)
	again[1].Labels = append([]string(nil), entries[2].Labels...)
	again[1].Labels[0] += "-changed"
	n.Replace(again)
	if len(n.byName) != 2 {
		t.Fatalf("%d nodes with labels, want 2", len(n.byName))
	}
	if s := n.byName[again[0].Labels[len(NodeLabelKeys)]]; s == nil || &s.values[0] != &first[again[0].Labels[len(NodeLabelKeys)]].values[0] {
		t.Errorf("unchanged node %q: labels escaped again", again[0].Labels[len(NodeLabelKeys)])
	}
	if s := n.byName[again[1].Labels[len(NodeLabelKeys)]]; s == nil || &s.values[0] == &first[again[1].Labels[len(NodeLabelKeys)]].values[0] {
		t.Errorf("changed node %q: old labels kept", again[1].Labels[len(NodeLabelKeys)])
	}
}

// exposition returns what the metrics handler writes for reg.
func exposition(t *testing.T, reg *Registry) string {
	t.Helper()
	write, err := reg.Exposition()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestObjectConditionsExposition: the condition and termination series the metrics handler writes from the
// objects are the text client_golang encodes from ObjectConditions' MustNewConstMetric series, for random objects
// of every kind (repeated condition types, label values that need escaping, objects being deleted), and nothing
// when there are none.
func TestObjectConditionsExposition(t *testing.T) {
	now := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	o := NewObjectConditions(func() time.Time { return now })
	compare := func(step string) {
		t.Helper()
		_, want := gatherText(t, o)
		reg := NewRegistry()
		reg.MustRegister(o)
		if got := exposition(t, reg); got != want {
			t.Fatalf("%s: text written from the objects differs from MustNewConstMetric's (-want +got):\n%s", step, cmp.Diff(want, got))
		}
	}
	compare("no listers")
	r := rand.New(rand.NewPCG(3, 4))
	values := []string{"a", "b", "", `quo"te`, "new\nline", `back\slash`}
	pick := func() string { return values[r.IntN(len(values))] }
	for k := range numObjectKinds {
		var objs []ConditionedObject
		for i := range 60 {
			obj := ConditionedObject{Name: fmt.Sprintf("%s-%d", pick(), i), Namespace: pick(), Labels: map[string]string{}}
			for _, key := range k.spec().labelKeys {
				if r.IntN(4) > 0 {
					obj.Labels[key] = pick()
				}
			}
			for range r.IntN(5) {
				obj.Conditions = append(obj.Conditions, metav1.Condition{Type: []string{"Ready", "Launched", "Drifted"}[r.IntN(3)],
					Status: metav1.ConditionStatus([]string{"True", "False", "Unknown"}[r.IntN(3)]), Reason: pick(),
					LastTransitionTime: metav1.NewTime(now.Add(-time.Duration(r.IntN(5000)) * time.Second))})
			}
			if r.IntN(4) == 0 {
				obj.DeletionTimestamp = now.Add(-time.Duration(r.IntN(600)) * time.Second)
			}
			objs = append(objs, obj)
		}
		o.SetLister(k, func() []ConditionedObject { return objs })
		compare(fmt.Sprintf("with %d kinds", k+1))
	}
}
