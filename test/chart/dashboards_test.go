package chart

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail/dovetail/pkg/metrics"
)

// registeredNames are the metric names pkg/metrics registers, read from each collector's descriptions.
type registeredNames map[string]bool

func (r registeredNames) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		// Desc has no accessor for its name; its String() starts `Desc{fqName: "<name>", ...`.
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			return &descError{d.String()}
		}
		r[m[1]] = true
	}
	return nil
}
func (r registeredNames) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}
func (r registeredNames) Unregister(prometheus.Collector) bool { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

type descError struct{ s string }

func (e *descError) Error() string { return "cannot read the metric name of " + e.s }

// promQL pieces: what is not a metric name.
var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promVariables = regexp.MustCompile(`\$\{?\w+\}?`)
	promNumbers   = regexp.MustCompile(`\b\d+(\.\d+)?([eE][-+]?\d+)?\b`)
	promIdents    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promFunctions = map[string]bool{
		"sum": true, "avg": true, "min": true, "max": true, "count": true, "topk": true, "bottomk": true,
		"rate": true, "irate": true, "increase": true, "delta": true, "histogram_quantile": true,
		"avg_over_time": true, "max_over_time": true, "min_over_time": true, "sum_over_time": true,
		"clamp_min": true, "clamp_max": true, "abs": true, "label_values": true, "vector": true,
	}
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// metricNames returns the metric names a PromQL expression reads.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promVariables.ReplaceAllString(e, " ")
	e = promNumbers.ReplaceAllString(e, " ")
	var out []string
	for _, m := range promIdents.FindAllString(e, -1) {
		if strings.HasSuffix(m, "(") {
			name := strings.TrimSpace(strings.TrimSuffix(m, "("))
			if !promFunctions[name] && !promKeywords[name] {
				t.Errorf("%q: unknown function %q (teach the test if it is PromQL)", expr, name)
			}
			continue
		}
		if promKeywords[m] {
			continue
		}
		out = append(out, m)
	}
	return out
}

// dashboardQueries returns every query of a Grafana dashboard: panel targets and templating variables.
func dashboardQueries(t *testing.T, name, text string) []string {
	t.Helper()
	var d struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatalf("%s is not JSON: %v", name, err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: no uid, title or panels", name)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", name, p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			// label_values(<series>, <label>): the series is the query.
			args := strings.TrimSuffix(strings.TrimPrefix(q["query"].(string), "label_values("), ")")
			if i := strings.LastIndex(args, ","); i >= 0 {
				args = args[:i]
			}
			out = append(out, args)
		}
	}
	return out
}

// TestDashboards: dashboards.enabled renders one ConfigMap per dashboard with the sidecar's label, and every
// metric a query reads is one the controller registers (pkg/metrics), so no panel stays empty for a renamed or
// invented metric.
func TestDashboards(t *testing.T) {
	if objs := objects(t, map[string]any{"settings": map[string]any{"clusterName": "prod-1"}}); objs["ConfigMap/dovetail-dashboard-capacity"] != nil {
		t.Fatal("dashboards rendered although dashboards.enabled is false by default")
	}
	objs := objects(t, map[string]any{
		"settings":   map[string]any{"clusterName": "prod-1"},
		"dashboards": map[string]any{"enabled": true, "namespace": "monitoring"},
	})
	reg := registeredNames{}
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range []string{"capacity", "provisioning", "disruption", "interruption"} {
		cm := objs["ConfigMap/dovetail-dashboard-"+name]
		if cm == nil {
			t.Fatalf("no ConfigMap for the %s dashboard; got %v", name, keys(objs))
		}
		if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetNamespace() != "monitoring" {
			t.Errorf("%s: labels %v, namespace %q", name, cm.GetLabels(), cm.GetNamespace())
		}
		data, _, _ := unstructuredString(cm.Object, "data", "dovetail-"+name+".json")
		queries := dashboardQueries(t, name, data)
		for _, q := range queries {
			names := metricNames(t, q)
			if len(names) == 0 {
				t.Errorf("%s: query reads no metric: %s", name, q)
			}
			for _, n := range names {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if strings.HasSuffix(n, suffix) && reg[strings.TrimSuffix(n, suffix)] {
						base = strings.TrimSuffix(n, suffix)
					}
				}
				if !reg[base] {
					t.Errorf("%s: %q is not a metric the controller exports (query %s)", name, n, q)
				}
				got = append(got, base)
			}
		}
	}
	// The panels the issue asks for read these families (a dashboard that lost one fails here).
	sort.Strings(got)
	for _, want := range []string{
		"karpenter_nodepools_usage", "karpenter_nodes_allocatable", "karpenter_cloudprovider_instance_type_offering_price_estimate",
		"karpenter_scheduler_queue_depth", "dovetail_provisioner_unschedulable_pods",
		"karpenter_voluntary_disruption_decisions_total", "karpenter_nodepools_allowed_disruptions",
		"karpenter_pods_eviction_requests_total", "karpenter_interruption_received_messages_total",
	} {
		if i := sort.SearchStrings(got, want); i == len(got) || got[i] != want {
			t.Errorf("no dashboard reads %s", want)
		}
	}
}

// TestMetricNamesParser: the query parser finds metric names and nothing else, so the test above can fail.
func TestMetricNamesParser(t *testing.T) {
	got := metricNames(t, `histogram_quantile(0.9, sum by (le, nodepool) (rate(foo_bucket{nodepool=~"$nodepool", x="a b"}[$__rate_interval]))) / on(nodepool) bar_total + 2`)
	if diff := cmp.Diff([]string{"foo_bucket", "bar_total"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}
