package metrics

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

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

func TestNewRegistersOnceAndRejectsDuplicates(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := New(reg); err == nil {
		t.Fatal("second New on the same registry succeeded, want a duplicate registration error")
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
	if got := testutil.ToFloat64(m.InstanceTypeOfferingPrice.WithLabelValues("m5.large", "on-demand", "us-west-2a")); got != 0.096 {
		t.Errorf("price estimate of m5.large on-demand = %v, want 0.096", got)
	}
	if got := testutil.CollectAndCount(m.InstanceTypeOfferingPrice); got != 2 {
		t.Errorf("price series = %d, want 2", got)
	}
}
