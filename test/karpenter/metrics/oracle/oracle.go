// Package oracle is the part of the Karpenter metrics oracles that imports Karpenter: it registers the metrics
// Karpenter's operator registers when it starts, reads the registry and compares it with the committed list. The
// oracle of each Karpenter version (a module of its own, on that version's packages) imports the packages that
// register metrics when they load and calls Run; this package compiles against whichever version the module
// requires.
package oracle

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/awslabs/operatorpkg/object"
	"github.com/awslabs/operatorpkg/status"
	prometheusv2 "github.com/jonathan-innis/aws-sdk-go-prometheus/v2"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	autoscalingv1beta1 "sigs.k8s.io/karpenter/pkg/apis/autoscaling/v1beta1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	metricsnode "sigs.k8s.io/karpenter/pkg/controllers/metrics/node"

	"github.com/dovetail/dovetail/test/karpenter/metrics/catalog"
)

// registerAtStart registers the metrics Karpenter's operator registers when it starts rather than when its packages
// load: the status-condition metrics of the status controllers (built as sigs.k8s.io/karpenter's
// pkg/controllers.NewControllers and the AWS provider's build them, every feature gate on), the AWS SDK metrics its
// operator attaches to the SDK configuration, and the node metrics (their label names come from the well-known
// labels, cloud provider ones included, so Karpenter makes them when it builds that controller). v1.14.3 and
// v1.15.0 build them alike.
func registerAtStart() {
	nodeClassLabel := karpv1.NodeClassLabelKey(object.GVK(&awsv1.EC2NodeClass{}).GroupKind())
	buckets := status.WithHistogramBuckets(prometheus.ExponentialBuckets(0.5, 2, 15))
	status.NewController[*karpv1.NodeClaim](nil, nil, status.EmitDeprecatedMetrics, buckets,
		status.WithLabels(nodeClassLabel, karpv1.NodePoolLabelKey))
	status.NewController[*karpv1.NodePool](nil, nil, status.EmitDeprecatedMetrics, buckets)
	status.NewGenericObjectController[*corev1.Node](nil, nil, buckets,
		status.WithLabels(nodeClassLabel, karpv1.NodePoolLabelKey, karpv1.NodeInitializedLabelKey))
	status.NewGenericObjectController[*autoscalingv1beta1.CapacityBuffer](nil, nil, status.EmitDeprecatedMetrics, buckets)
	status.NewController[*awsv1.EC2NodeClass](nil, nil, status.EmitDeprecatedMetrics)
	metricsnode.NewController(nil)
	prometheusv2.WithPrometheusMetrics(aws.Config{}, crmetrics.Registry)
}

// Run registers the start-time metrics, reads every metric Karpenter registered in controller-runtime's registry
// (the caller's blank imports registered the others) and compares them with version's part of the committed list
// at listPath (catalog.Check; KARPENTER_METRICS_UPDATE=1 rewrites it). It returns what it read.
func Run(t *testing.T, listPath, version, source string) []catalog.Metric {
	t.Helper()
	registerAtStart()
	got, err := catalog.FromRegistry(crmetrics.Registry, catalog.Kept)
	if err != nil {
		t.Fatal(err)
	}
	catalog.Check(t, listPath, version, source, got)
	return got
}
