package metrics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/version"
)

func names(t *testing.T, m *Metrics) []string {
	t.Helper()
	descs, err := Describe(m)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range descs {
		out = append(out, d.Name)
	}
	return out
}

// TestRunsHaveRegistriesOfTheirOwn: two runs in one process, each with its own registry, count apart; a second
// New on one registry is refused with the field's name.
func TestRunsHaveRegistriesOfTheirOwn(t *testing.T) {
	first, second := NewForTest(), NewForTest()
	second.NodeClaimsCreated.WithLabelValues("provisioned", "default", "false").Inc()
	if got := testutil.ToFloat64(first.NodeClaimsCreated.WithLabelValues("provisioned", "default", "false")); got != 0 {
		t.Errorf("first run's counter = %v after the second run counted 1, want 0", got)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil || !strings.Contains(err.Error(), "NodeClaimsCreated") {
		t.Fatalf("second New on one registry = %v, want an error naming NodeClaimsCreated", err)
	}
}

// TestCatalogListsEveryMetric: every registered metric has a catalog entry (its page row) and every entry a
// metric; the catalog's type is the collector's.
func TestCatalogListsEveryMetric(t *testing.T) {
	registered := map[string]bool{}
	for _, n := range names(t, NewForTest()) {
		registered[n] = true
		found := false
		for _, i := range Catalog() {
			found = found || i.Name == n
		}
		if !found {
			t.Errorf("no catalog entry for %s", n)
		}
	}
	for _, i := range Catalog() {
		if !registered[i.Name] {
			t.Errorf("catalog entry %s is not a registered metric", i.Name)
		}
	}
	m := NewForTest()
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		// The concrete types: *prometheus.counter, *prometheus.GaugeVec, ... (a gauge is also a Counter).
		typ := strings.TrimSuffix(strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", v.Field(i).Interface()), "*prometheus.")), "vec")
		if !contains([]string{"counter", "gauge", "histogram", "summary"}, typ) {
			continue
		}
		ch := make(chan *prometheus.Desc)
		go func() { v.Field(i).Interface().(prometheus.Collector).Describe(ch); close(ch) }()
		for d := range ch {
			name := descPattern.FindStringSubmatch(d.String())[1]
			for _, info := range Catalog() {
				if info.Name == name && info.Type != typ {
					t.Errorf("%s: catalog says %s, collector is a %s", name, info.Type, typ)
				}
			}
		}
	}
}

type failing struct{ cloudprovider.CloudProvider }

func (failing) Name() string { return "test" }
func (failing) Get(context.Context, string) (*karpv1.NodeClaim, error) {
	return nil, cloudprovider.NewNotFoundError(errors.New("gone"))
}
func (failing) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, nil }
func (failing) Delete(context.Context, *karpv1.NodeClaim) error {
	return cloudprovider.NewNotFoundError(errors.New("gone"))
}
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
	if got := testutil.ToFloat64(m.CloudProviderErrors.WithLabelValues("gc", "Get", "test", "NotFoundError", "")); got != 1 {
		t.Errorf("errors_total{Get,NotFoundError} = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.CloudProviderDuration); got != 2 {
		t.Errorf("duration series = %d, want 2 (gc/Get and unknown/List)", got)
	}
	// An error about a NodeClaim is labelled with its NodePool.
	nc := &karpv1.NodeClaim{}
	nc.Labels = map[string]string{karpv1.NodePoolLabelKey: "web"}
	if err := cp.Delete(ctx, nc); err == nil {
		t.Fatal("Delete error not passed through")
	}
	if got := testutil.ToFloat64(m.CloudProviderErrors.WithLabelValues("gc", "Delete", "test", "NotFoundError", "web")); got != 1 {
		t.Errorf("errors_total{Delete,NotFoundError,nodepool=web} = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.CloudProviderErrors); got != 2 {
		t.Errorf("error series = %d, want 2", got)
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

// TestBuildInfo: one series, 1, with the binary's Go version, architecture and commit.
func TestBuildInfo(t *testing.T) {
	m := NewForTest()
	if n := testutil.CollectAndCount(m.BuildInfo); n != 1 {
		t.Fatalf("karpenter_build_info has %d series, want 1", n)
	}
	got := testutil.ToFloat64(m.BuildInfo.WithLabelValues(version.Version(), runtime.Version(), runtime.GOARCH, version.Commit()))
	if got != 1 {
		t.Errorf("karpenter_build_info{goversion=%q} = %v, want 1", runtime.Version(), got)
	}
}

// TestObserveBatch: a closed window observes its size and open time under its batcher.
func TestObserveBatch(t *testing.T) {
	m := NewForTest()
	m.ObserveBatch("create_fleet", 6, 300*time.Millisecond)
	for name, h := range map[string]*prometheus.HistogramVec{"size": m.BatcherBatchSize, "time": m.BatcherBatchTime} {
		if n := testutil.CollectAndCount(h); n != 1 {
			t.Errorf("batch %s: %d series, want 1", name, n)
		}
	}
	out, err := testutil.CollectAndFormat(m.BatcherBatchSize, expfmt.TypeTextPlain, "karpenter_cloudprovider_batcher_batch_size")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `karpenter_cloudprovider_batcher_batch_size_sum{batcher="create_fleet"} 6`) {
		t.Errorf("batch size not observed under create_fleet:\n%s", out)
	}
}
