package operator

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/metrics"
)

// servedRegistry returns a run registry with nodes and pods whose label values need escaping, another gauge of
// the run, and a second registry standing for controller-runtime's.
func servedRegistry(t *testing.T) (*metrics.Registry, *prometheus.Registry) {
	t.Helper()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	reg := metrics.NewRegistry()
	nodes, pods := metrics.NewNodes(clock), metrics.NewPods(clock)
	other := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dovetail_example", Help: "An example."}, []string{"x"})
	other.WithLabelValues(`a"b`).Set(2)
	reg.MustRegister(nodes, pods, other)
	var entries []metrics.NodeEntry
	for i, v := range []string{"plain", `quo"te`, `back\slash`, "new\nline"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{
			"karpenter.sh/nodepool": v, "topology.kubernetes.io/zone": "us-west-2a", "kubernetes.io/arch": v}},
			Status: corev1.NodeStatus{Phase: corev1.NodeRunning}}
		rs := []metrics.ResourceValue{{Name: "cpu", Value: 3.92}, {Name: "memory", Value: 15e9}, {Name: "ephemeral-storage", Value: 1}}
		entries = append(entries, metrics.NodeEntry{Labels: metrics.NodeLabelValues(node), Created: now.Add(-time.Hour),
			Allocatable: rs, Overhead: rs[:1], PodRequests: rs[1:]})
		pods.Set(&metrics.PodEntry{Name: "p" + v, Namespace: "default", OwnerAPIVersion: "apps/v1", OwnerKind: "ReplicaSet",
			OwnerName: v, Node: node.Name, NodePool: v, Arch: v, Phase: "Pending", Created: now.Add(-time.Minute)})
	}
	nodes.Replace(entries)
	also := prometheus.NewRegistry()
	also.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "workqueue_example", Help: "Another."}, func() float64 { return 7 }))
	return reg, also
}

// TestServedMetrics: whatever format the scraper asks for, /metrics answers text that decodes to the families the
// registries gather, compressed when asked; other paths go to the next handler.
func TestServedMetrics(t *testing.T) {
	reg, also := servedRegistry(t)
	want, err := prometheus.Gatherers{reg, also}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	handler := textMetrics(reg, also)
	for _, tc := range []struct{ accept, encoding string }{
		{"", ""},
		{string(expfmt.NewFormat(expfmt.TypeTextPlain)), "gzip"},
		{string(expfmt.NewFormat(expfmt.TypeProtoDelim)), ""},
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "gzip"},
	} {
		t.Run(tc.accept+" "+tc.encoding, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, metricsPath, nil)
			req.Header.Set("Accept", tc.accept)
			req.Header.Set("Accept-Encoding", tc.encoding)
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if got := rec.Header().Get("Content-Encoding"); got != tc.encoding {
				t.Errorf("Content-Encoding %q, want %q", got, tc.encoding)
			}
			var body io.Reader = rec.Body
			if tc.encoding == "gzip" {
				if body, err = gzip.NewReader(rec.Body); err != nil {
					t.Fatal(err)
				}
			}
			format := expfmt.ResponseFormat(rec.Header())
			if format.FormatType() != expfmt.TypeTextPlain {
				t.Fatalf("format %q, want text", format)
			}
			dec := expfmt.NewDecoder(body, format)
			var got []*dto.MetricFamily
			for {
				f := &dto.MetricFamily{}
				if err := dec.Decode(f); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				got = append(got, f)
			}
			// The text decoder hands the families out in no order.
			slices.SortFunc(got, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
			if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
				t.Errorf("decoded families differ from the gathered ones (-want +got):\n%s", d)
			}
		})
	}
	filter, err := servedMetrics(reg)(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := filter(logr.Discard(), next)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("/debug/pprof/: status %d, want the next handler's", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metricsPath, nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "karpenter_nodes_allocatable{") {
		t.Errorf("/metrics through the filter: status %d, node series missing", rec.Code)
	}
}

// TestServedMetricsConflict: a family in both registries fails the scrape with 500 and its name.
func TestServedMetricsConflict(t *testing.T) {
	reg, _ := servedRegistry(t)
	also := prometheus.NewRegistry()
	also.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "karpenter_pods_state", Help: "Clash."}))
	rec := httptest.NewRecorder()
	textMetrics(reg, also).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metricsPath, nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "karpenter_pods_state") {
		t.Errorf("status %d, body %q; want 500 naming karpenter_pods_state", rec.Code, rec.Body)
	}
}
