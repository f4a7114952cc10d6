package metrics

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scale of the scrape benchmark: a large cluster.
const (
	benchNodes = 2000
	benchPods  = 20000
)

// fill records benchNodes nodes with AWS labels and four resources each, as many NodeClaims and Nodes with five
// conditions each, and benchPods pods bound to them.
func fill(m *Metrics) {
	entries := make([]NodeEntry, 0, benchNodes)
	nodeNames := make([]string, benchNodes)
	for i := range benchNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250), Labels: map[string]string{
			"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot", "topology.kubernetes.io/zone": "us-west-2a",
			"topology.kubernetes.io/region": "us-west-2", "node.kubernetes.io/instance-type": "m5.xlarge", "kubernetes.io/arch": "amd64",
			"kubernetes.io/os": "linux", "karpenter.k8s.aws/instance-family": "m5", "karpenter.k8s.aws/instance-size": "xlarge",
			"karpenter.k8s.aws/instance-cpu": "4", "karpenter.k8s.aws/instance-memory": "16384", "karpenter.k8s.aws/instance-category": "m",
			"karpenter.k8s.aws/instance-generation": "5", "topology.k8s.aws/zone-id": "usw2-az1"}}, Status: corev1.NodeStatus{Phase: corev1.NodeRunning}}
		nodeNames[i] = node.Name
		rs := []ResourceValue{{"cpu", 3.92}, {"memory", 15e9}, {"pods", 58}, {"ephemeral-storage", 18e9}}
		entries = append(entries, NodeEntry{Labels: NodeLabelValues(node), Created: time.Now().Add(-time.Hour),
			Allocatable: rs, Overhead: rs, PodRequests: rs, PodLimits: rs, DaemonRequests: rs, DaemonLimits: rs})
	}
	m.Nodes.Replace(entries)
	// Each NodeClaim and Node with the conditions they carry when settled (ObjectConditions, read at the scrape).
	conditioned := func(kind string, types ...string) []ConditionedObject {
		out := make([]ConditionedObject, 0, benchNodes)
		for i := range benchNodes {
			obj := ConditionedObject{Name: fmt.Sprintf("%s-%d", kind, i), Labels: map[string]string{
				"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/initialized": "true"}}
			for _, t := range types {
				obj.Conditions = append(obj.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t,
					LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))})
			}
			out = append(out, obj)
		}
		return out
	}
	claims := conditioned("default", "Launched", "Registered", "Initialized", "Ready", "ConsistentStateFound")
	nodes := conditioned("ip-10-0-0", "Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
	m.ObjectConditions.SetLister(KindNodeClaim, func() []ConditionedObject { return claims })
	m.ObjectConditions.SetLister(KindNode, func() []ConditionedObject { return nodes })
	for i := range benchPods {
		m.Pods.Set(&PodEntry{Name: fmt.Sprintf("app-%d", i), Namespace: "default", OwnerAPIVersion: "apps/v1", OwnerKind: "ReplicaSet",
			OwnerName: "app-5d8f", Node: nodeNames[i%benchNodes], NodePool: "default", Zone: "us-west-2a", Arch: "amd64",
			CapacityType: "spot", InstanceType: "m5.xlarge", Phase: "Running", Ready: true, Created: time.Now(), Bound: true})
	}
}

// countingWriter counts the bytes written to it and drops them.
type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}

// BenchmarkScrape: one scrape as the metrics handler serves it, of the registry filled for 2,000 nodes and 20,000
// pods: the per-node and per-pod families written as text from their entries, the others gathered and encoded.
// Reports the scrape's time, its size (scrape-bytes) and the heap the filled collectors hold (held-MB).
func BenchmarkScrape(b *testing.B) {
	before := heapInUse()
	reg := NewRegistry()
	m, err := New(reg)
	if err != nil {
		b.Fatal(err)
	}
	fill(m)
	held := heapInUse() - before
	var size int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		write, err := reg.Exposition()
		if err != nil {
			b.Fatal(err)
		}
		var out countingWriter
		if err := write(&out); err != nil {
			b.Fatal(err)
		}
		size = int(out)
	}
	b.ReportMetric(float64(size), "scrape-bytes")
	b.ReportMetric(float64(held)/1e6, "held-MB")
	runtime.KeepAlive(m)
}

// BenchmarkScrapeGather: the same registry gathered as client_golang families and encoded as text, as a
// Prometheus client library handler would serve it (other gatherers of the registry still take this path).
func BenchmarkScrapeGather(b *testing.B) {
	reg := NewRegistry()
	m, err := New(reg)
	if err != nil {
		b.Fatal(err)
	}
	fill(m)
	var size int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		families, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		// The metrics handler writes the text to the connection as it encodes it: a counting writer stands for it.
		var out countingWriter
		enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range families {
			if err := enc.Encode(f); err != nil {
				b.Fatal(err)
			}
		}
		size = int(out)
	}
	b.ReportMetric(float64(size), "scrape-bytes")
	runtime.KeepAlive(m)
}
