package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

var fqName = regexp.MustCompile(`fqName: "([a-z_]+)"`)

func names(t *testing.T, m *Metrics) []string {
	t.Helper()
	var out []string
	for _, c := range m.collectors() {
		ch := make(chan *prometheus.Desc, 10)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			match := fqName.FindStringSubmatch(d.String())
			if match == nil {
				t.Fatalf("no name in %s", d)
			}
			out = append(out, match[1])
		}
	}
	return out
}

// TestNewTwiceSharesCollectors: a second controller run in one process registers on the same registry; it gets
// the collectors the first registered, so both count into the same series.
func TestNewTwiceSharesCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	second, err := New(reg)
	if err != nil {
		t.Fatalf("second New on the same registry: %v", err)
	}
	second.NodeClaimsCreated.WithLabelValues("provisioning", "default").Inc()
	second.DisruptionSavings.Set(2.5)
	if got := testutil.ToFloat64(first.NodeClaimsCreated.WithLabelValues("provisioning", "default")); got != 1 {
		t.Errorf("first run's counter = %v after the second run counted 1, want 1", got)
	}
	if got := testutil.ToFloat64(first.DisruptionSavings); got != 2.5 {
		t.Errorf("first run's gauge = %v, want 2.5", got)
	}
}

// TestNewRefusesAForeignCollectorOfTheSameName: a collector of another kind under one of our names is a real
// conflict, reported with the field's name.
func TestNewRefusesAForeignCollectorOfTheSameName(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "dovetail_disruption_savings_dollars_per_hour", Help: "other"}))
	_, err := New(reg)
	if err == nil || !strings.Contains(err.Error(), "DisruptionSavings") {
		t.Fatalf("New = %v, want an error naming DisruptionSavings", err)
	}
}

// TestCollectorsListsEveryField keeps collectors() (used by the name checks below) complete.
func TestCollectorsListsEveryField(t *testing.T) {
	m := NewForTest()
	listed := map[prometheus.Collector]bool{}
	for _, c := range m.collectors() {
		listed[c] = true
	}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if c, ok := v.Field(i).Interface().(prometheus.Collector); ok && !listed[c] {
			t.Errorf("collectors() leaves out %s", v.Type().Field(i).Name)
		}
	}
}

// TestDocsListEveryMetric keeps docs/metrics.md in step with the metrics defined here.
func TestDocsListEveryMetric(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names(t, NewForTest()) {
		if !strings.Contains(string(b), "| `"+n+"` |") {
			t.Errorf("docs/metrics.md has no row for %s", n)
		}
	}
}

type failing struct{ cloudprovider.CloudProvider }

func (failing) Name() string { return "test" }
func (failing) Get(context.Context, string) (*karpv1.NodeClaim, error) {
	return nil, cloudprovider.NewNotFoundError(errors.New("gone"))
}
func (failing) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, nil }
func (failing) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return []*cloudprovider.InstanceType{{Name: "m5.large", Offerings: []cloudprovider.Offering{
		{Zone: "us-west-2a", CapacityType: "spot", Price: 0.035},
		{Zone: "us-west-2a", CapacityType: "on-demand", Price: 0.096},
	}}}, nil
}

func TestInstrumentedCloudProvider(t *testing.T) {
	m := NewForTest()
	cp := Instrument(failing{}, m)
	ctx := WithController(context.Background(), "gc")
	if _, err := cp.Get(ctx, "id"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("Get error %v not passed through", err)
	}
	if _, err := cp.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.CloudProviderErrors.WithLabelValues("gc", "Get", "test", "NotFoundError")); got != 1 {
		t.Errorf("errors_total{Get,NotFoundError} = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.CloudProviderDuration); got != 2 {
		t.Errorf("duration series = %d, want 2 (gc/Get and unknown/List)", got)
	}
	if got := testutil.CollectAndCount(m.CloudProviderErrors); got != 1 {
		t.Errorf("error series = %d, want 1", got)
	}
	// Listing instance types publishes each offering's price.
	if _, err := cp.GetInstanceTypes(ctx, &karpv1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(m.InstanceTypeOfferingPrice); got != 2 {
		t.Errorf("price series = %d, want 2", got)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.InstanceTypeOfferingPrice)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	prices := map[string]float64{}
	for _, f := range families {
		for _, series := range f.GetMetric() {
			var labels []string
			for _, l := range series.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			prices[strings.Join(labels, ",")] = series.GetGauge().GetValue()
		}
	}
	if got := prices["capacity_type=on-demand,instance_type=m5.large,zone=us-west-2a"]; got != 0.096 {
		t.Errorf("price estimate of m5.large on-demand = %v, want 0.096 (all: %v)", got, prices)
	}
}

// TestNodeAllocatable: the collector makes a series a node and resource of the NodePools recorded, and an empty
// record forgets a NodePool.
func TestNodeAllocatable(t *testing.T) {
	a := NewNodeAllocatable()
	a.Record("web", []AllocatableNode{
		{Node: "ip-1", InstanceType: "m5.large", CapacityType: "spot", Zone: "us-west-2a", Arch: "amd64", Resources: []ResourceValue{{"pods", 29}, {"cpu", 1.93}}},
	})
	a.Record("batch", []AllocatableNode{
		{Node: "ip-2", InstanceType: "r5.xlarge", CapacityType: "on-demand", Zone: "us-west-2b", Arch: "amd64", Resources: []ResourceValue{{"memory", 3e10}}},
	})
	scrape := func() []string {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(a)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range families {
			for _, s := range f.GetMetric() {
				var labels []string
				for _, l := range s.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				out = append(out, fmt.Sprintf("%s %v", strings.Join(labels, ","), s.GetGauge().GetValue()))
			}
		}
		return out
	}
	want := []string{
		"arch=amd64,capacity_type=on-demand,instance_type=r5.xlarge,node_name=ip-2,nodepool=batch,resource_type=memory,zone=us-west-2b 3e+10",
		"arch=amd64,capacity_type=spot,instance_type=m5.large,node_name=ip-1,nodepool=web,resource_type=cpu,zone=us-west-2a 1.93",
		"arch=amd64,capacity_type=spot,instance_type=m5.large,node_name=ip-1,nodepool=web,resource_type=pods,zone=us-west-2a 29",
	}
	if diff := cmp.Diff(want, scrape()); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	a.Record("batch", nil)
	if diff := cmp.Diff(want[1:], scrape()); diff != "" {
		t.Errorf("after forgetting batch (-want +got):\n%s", diff)
	}
	// Two entries with the same labels (two NodeClaims naming one node): one series, the last entry's value.
	a.Record("web", []AllocatableNode{
		{Node: "ip-1", InstanceType: "m5.large", CapacityType: "spot", Zone: "us-west-2a", Arch: "amd64", Resources: []ResourceValue{{"cpu", 1}}},
		{Node: "ip-1", InstanceType: "m5.large", CapacityType: "spot", Zone: "us-west-2a", Arch: "amd64", Resources: []ResourceValue{{"cpu", 2}}},
	})
	if diff := cmp.Diff([]string{
		"arch=amd64,capacity_type=spot,instance_type=m5.large,node_name=ip-1,nodepool=web,resource_type=cpu,zone=us-west-2a 2",
	}, scrape()); diff != "" {
		t.Errorf("duplicate entries (-want +got):\n%s", diff)
	}
}
