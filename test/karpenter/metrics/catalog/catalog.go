// Package catalog reads a Prometheus registry into a list of metric descriptors (name, type, label names) and
// keeps that list, per Karpenter version, in a JSON file. It imports no Karpenter package, so the oracles of
// several Karpenter versions (each a module of its own) share it.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric is one metric family as a dashboard sees it.
type Metric struct {
	Name string `json:"name"`
	// Type is counter, gauge, histogram, summary or untyped.
	Type string `json:"type"`
	// Labels are the label names of every series, sorted (const labels included; le and quantile not).
	Labels []string `json:"labels"`
	// Versions are the Karpenter minor versions (v1.14, v1.15) that register the metric with these labels.
	Versions []string `json:"versions"`
}

// File is the committed list: every metric of every Karpenter version the project answers for.
type File struct {
	// Sources names, by version, the modules the metrics of that version were read from.
	Sources map[string]string `json:"sources"`
	Metrics []Metric          `json:"metrics"`
}

// Read reads a File.
func Read(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("reading metric list: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return File{}, fmt.Errorf("parsing metric list %s: %w", path, err)
	}
	return f, nil
}

// Write writes f sorted by name, one metric a line group, so a diff shows the metric that changed.
func Write(path string, f File) error {
	sortMetrics(f.Metrics)
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding metric list: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing metric list: %w", err)
	}
	return nil
}

// OfVersion returns the metrics f lists for version, without their Versions.
func (f File) OfVersion(version string) []Metric {
	var out []Metric
	for _, m := range f.Metrics {
		if slices.Contains(m.Versions, version) {
			out = append(out, Metric{Name: m.Name, Type: m.Type, Labels: m.Labels})
		}
	}
	sortMetrics(out)
	return out
}

// WithVersion returns f with version's metrics replaced by ms (read from source).
func (f File) WithVersion(version, source string, ms []Metric) File {
	key := func(m Metric) string { return m.Name + "\x00" + m.Type + "\x00" + strings.Join(m.Labels, ",") }
	var out []Metric
	for _, m := range f.Metrics {
		m.Versions = slices.DeleteFunc(slices.Clone(m.Versions), func(v string) bool { return v == version })
		if len(m.Versions) > 0 {
			out = append(out, m)
		}
	}
	// Indices, not pointers: out grows while it is matched.
	byKey := map[string]int{}
	for i := range out {
		byKey[key(out[i])] = i
	}
	for _, m := range ms {
		if i, ok := byKey[key(m)]; ok {
			out[i].Versions = append(out[i].Versions, version)
			sort.Strings(out[i].Versions)
			continue
		}
		m.Versions = []string{version}
		out = append(out, m)
		byKey[key(m)] = len(out) - 1
	}
	sources := map[string]string{}
	for k, v := range f.Sources {
		sources[k] = v
	}
	sources[version] = source
	return File{Sources: sources, Metrics: out}
}

func sortMetrics(ms []Metric) {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].Name != ms[j].Name {
			return ms[i].Name < ms[j].Name
		}
		return strings.Join(ms[i].Versions, ",") < strings.Join(ms[j].Versions, ",")
	})
}

// FromRegistry lists every collector registered with reg whose name keep accepts. A metric vector shows no series
// until it has a child, so each vector is given one child with placeholder label values first: call it on a
// registry no one else uses afterwards. reg must be a *prometheus.Registry: its collectors are read from its
// unexported table, since the prometheus library offers no way to list what a registry holds.
func FromRegistry(reg prometheus.Registerer, keep func(name string) bool) ([]Metric, error) {
	r, ok := reg.(*prometheus.Registry)
	if !ok {
		return nil, fmt.Errorf("registry is a %T, not a *prometheus.Registry", reg)
	}
	collectors, err := registered(r)
	if err != nil {
		return nil, err
	}
	fresh := prometheus.NewPedanticRegistry()
	described := map[string]bool{}
	for _, c := range collectors {
		kept := false
		for _, d := range describe(c) {
			name, labels, err := parseDesc(d)
			if err != nil {
				return nil, err
			}
			if !keep(name) {
				continue
			}
			kept = true
			described[name] = true
			fill(c, len(labels))
		}
		if kept {
			if err := fresh.Register(c); err != nil {
				return nil, fmt.Errorf("registering %T again: %w", c, err)
			}
		}
	}
	families, err := fresh.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering: %w", err)
	}
	var out []Metric
	for _, fam := range families {
		labels := map[string]bool{}
		for _, m := range fam.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		names := make([]string, 0, len(labels))
		for l := range labels {
			names = append(names, l)
		}
		sort.Strings(names)
		out = append(out, Metric{Name: fam.GetName(), Type: typeName(fam.GetType()), Labels: names})
		delete(described, fam.GetName())
	}
	if len(described) > 0 {
		return nil, fmt.Errorf("collectors described metrics they did not collect: %v", keys(described))
	}
	sortMetrics(out)
	return out, nil
}

func registered(r *prometheus.Registry) ([]prometheus.Collector, error) {
	v := reflect.ValueOf(r).Elem()
	var out []prometheus.Collector
	for _, field := range []string{"collectorsByID", "uncheckedCollectors"} {
		f := v.FieldByName(field)
		if !f.IsValid() {
			return nil, fmt.Errorf("prometheus.Registry has no field %s: the prometheus library changed", field)
		}
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch c := f.Interface().(type) {
		case map[uint64]prometheus.Collector:
			for _, col := range c {
				out = append(out, col)
			}
		case []prometheus.Collector:
			out = append(out, c...)
		default:
			return nil, fmt.Errorf("prometheus.Registry.%s is a %T: the prometheus library changed", field, c)
		}
	}
	return out, nil
}

func describe(c prometheus.Collector) []*prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var out []*prometheus.Desc
	for d := range ch {
		out = append(out, d)
	}
	return out
}

// descRE reads the name and variable label names from prometheus.Desc's String form.
var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: .*, variableLabels: \{([^}]*)\}\}$`)

func parseDesc(d *prometheus.Desc) (string, []string, error) {
	m := descRE.FindStringSubmatch(d.String())
	if m == nil {
		return "", nil, fmt.Errorf("cannot read descriptor %s", d)
	}
	var labels []string
	if m[2] != "" {
		labels = strings.Split(m[2], ",")
	}
	return m[1], labels, nil
}

// fill gives a metric vector one child so it shows in a scrape.
func fill(c prometheus.Collector, n int) {
	values := make([]string, n)
	for i := range values {
		values[i] = "x"
	}
	switch v := c.(type) {
	case *prometheus.CounterVec:
		v.WithLabelValues(values...)
	case *prometheus.GaugeVec:
		v.WithLabelValues(values...)
	case *prometheus.HistogramVec:
		v.WithLabelValues(values...)
	case *prometheus.SummaryVec:
		v.WithLabelValues(values...)
	}
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return "histogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	default:
		return "untyped"
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Karpenter's own metrics and those of the libraries it serves them with (controller-runtime, client-go through
// operatorpkg, the AWS SDK); Go runtime and process metrics are left out (every Go program has them).
var prefixes = []string{
	"karpenter_", "operator_", "aws_sdk_go_", "client_go_", "controller_runtime_", "workqueue_", "leader_election_",
}

// Kept reports whether name is a metric the list records.
func Kept(name string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// UpdateEnv set to 1 makes Check rewrite the committed list instead of comparing.
const UpdateEnv = "KARPENTER_METRICS_UPDATE"

// Check compares the metrics read from Karpenter version's packages (source names them) with the committed
// list at path, or, with KARPENTER_METRICS_UPDATE=1, rewrites that version's part of the list.
func Check(t testing.TB, path, version, source string, got []Metric) {
	t.Helper()
	if len(got) < 100 {
		t.Fatalf("read only %d metrics from Karpenter %s's registry; expected well over 100", len(got), version)
	}
	committed, err := Read(path)
	update := os.Getenv(UpdateEnv) == "1"
	if err != nil && !(update && errors.Is(err, fs.ErrNotExist)) {
		t.Fatal(err)
	}
	if update {
		if err := Write(path, committed.WithVersion(version, source, got)); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d metrics of Karpenter %s to %s", len(got), version, path)
		return
	}
	if diff := cmp.Diff(committed.OfVersion(version), got); diff != "" {
		t.Errorf("%s no longer lists Karpenter %s's metrics as %s registers them (-committed +Karpenter); "+
			"rerun with %s=1 and review the change:\n%s", path, version, source, UpdateEnv, diff)
	}
	if committed.Sources[version] != source {
		t.Errorf("%s says Karpenter %s was read from %q; this oracle reads %q (rerun with %s=1)",
			path, version, committed.Sources[version], source, UpdateEnv)
	}
}

// CrossCheck compares the names read from Karpenter's packages with the names of Karpenter's metrics reference
// page (refPath: one name a line, # comments). Every difference must be one of known (name: why); a known
// difference that no longer is one fails too, so the list stays true.
func CrossCheck(t testing.TB, refPath string, got []Metric, known map[string]string) {
	t.Helper()
	b, err := os.ReadFile(refPath)
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ref[l] = true
		}
	}
	read := map[string]bool{}
	for _, m := range got {
		read[m.Name] = true
	}
	diff := map[string]bool{}
	for n := range ref {
		if !read[n] {
			diff[n] = true
			if _, ok := known[n]; !ok {
				t.Errorf("%s is on Karpenter's reference page (%s) but not registered by its packages", n, refPath)
			}
		}
	}
	for n := range read {
		if !ref[n] {
			diff[n] = true
			if _, ok := known[n]; !ok {
				t.Errorf("%s is registered by Karpenter's packages but not on its reference page (%s)", n, refPath)
			}
		}
	}
	for n, why := range known {
		if !diff[n] {
			t.Errorf("%s is listed as a difference from the reference page (%s) but is none any more", n, why)
		}
	}
}
