package metrics_test

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	_ "github.com/aws/karpenter-provider-aws/pkg/batcher"
	_ "github.com/aws/karpenter-provider-aws/pkg/controllers/interruption"
	_ "github.com/aws/karpenter-provider-aws/pkg/controllers/metrics"
	_ "github.com/aws/karpenter-provider-aws/pkg/operator"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/instance"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/launchtemplate"
	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	_ "sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	_ "sigs.k8s.io/karpenter/pkg/controllers/disruption"
	metricsnode "sigs.k8s.io/karpenter/pkg/controllers/metrics/node"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/nodepool"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/pod"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/health"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination/terminator"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/lifecycle"
	_ "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	_ "sigs.k8s.io/karpenter/pkg/controllers/state"
	_ "sigs.k8s.io/karpenter/pkg/metrics"
	_ "sigs.k8s.io/karpenter/pkg/operator"
)

// TestSameAsKarpenter: every metric the catalog calls the same as Karpenter's has Karpenter's type and label
// names; Karpenter metrics Dovetail does not register are listed in the log.
func TestSameAsKarpenter(t *testing.T) {
	status.NewController[*v1.NodeClaim](nil, nil, status.EmitDeprecatedMetrics, status.WithLabels("karpenter.k8s.aws/ec2nodeclass", v1.NodePoolLabelKey))
	status.NewController[*v1.NodePool](nil, nil, status.EmitDeprecatedMetrics)
	status.NewGenericObjectController[*corev1.Node](nil, nil, status.WithLabels("karpenter.k8s.aws/ec2nodeclass", v1.NodePoolLabelKey, v1.NodeInitializedLabelKey))
	status.NewController[*awsv1.EC2NodeClass](nil, nil, status.EmitDeprecatedMetrics)
	metricsnode.NewController(nil)
	type desc struct {
		typ    string
		labels []string
	}
	theirs := map[string]desc{}
	reg := crmetrics.Registry.(*prometheus.Registry)
	f := reflect.ValueOf(reg).Elem().FieldByName("collectorsByID")
	m := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	pattern := regexp.MustCompile(`fqName: "([a-zA-Z0-9_:]+)".*variableLabels: \{([^}]*)\}`)
	for _, k := range m.MapKeys() {
		c := m.MapIndex(k).Interface().(prometheus.Collector)
		typ := kind(c)
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			match := pattern.FindStringSubmatch(d.String())
			var labels []string
			if match[2] != "" {
				labels = strings.Split(match[2], ",")
			}
			sort.Strings(labels)
			theirs[match[1]] = desc{typ, labels}
		}
	}
	ours, err := metrics.Describe(metrics.NewForTest())
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, d := range ours {
		registered[d.Name] = true
		var info metrics.Info
		for _, i := range metrics.Catalog() {
			if i.Name == d.Name {
				info = i
			}
		}
		k, ok := theirs[d.Name]
		if !ok {
			if info.Karpenter == "" {
				t.Errorf("%s: the catalog says same as Karpenter, but Karpenter v1.14 has no such metric", d.Name)
			}
			continue
		}
		if info.Karpenter != "" {
			continue
		}
		labels := append([]string(nil), d.Labels...)
		sort.Strings(labels)
		if k.typ != info.Type || strings.Join(k.labels, ",") != strings.Join(labels, ",") {
			t.Errorf("%s: Karpenter %s %v, Dovetail %s %v", d.Name, k.typ, k.labels, info.Type, labels)
		}
	}
	var missing []string
	for name := range theirs {
		if (strings.HasPrefix(name, "karpenter_") || strings.HasPrefix(name, "operator_")) && !registered[name] {
			missing = append(missing, fmt.Sprintf("%s %s %v", name, theirs[name].typ, theirs[name].labels))
		}
	}
	sort.Strings(missing)
	t.Logf("%d Karpenter metrics not registered by Dovetail:\n%s", len(missing), strings.Join(missing, "\n"))
}

func kind(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	case prometheus.Counter:
		return "counter"
	case prometheus.Gauge:
		return "gauge"
	case prometheus.Histogram:
		return "histogram"
	case prometheus.Summary:
		return "summary"
	}
	return fmt.Sprintf("%T", c)
}
