package v115

import (
	"path/filepath"
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

	// Every package that registers a metric when it is loaded.
	_ "github.com/aws/karpenter-provider-aws/pkg/batcher"
	_ "github.com/aws/karpenter-provider-aws/pkg/controllers/interruption"
	_ "github.com/aws/karpenter-provider-aws/pkg/controllers/metrics"
	_ "github.com/aws/karpenter-provider-aws/pkg/operator"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/instance"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/launchtemplate"
	_ "sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	_ "sigs.k8s.io/karpenter/pkg/controllers"
	_ "sigs.k8s.io/karpenter/pkg/controllers/disruption"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/nodepool"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/pod"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination/terminator"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/lifecycle"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/reboot"
	_ "sigs.k8s.io/karpenter/pkg/controllers/pod/deletioncost"
	_ "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	_ "sigs.k8s.io/karpenter/pkg/controllers/state"
	_ "sigs.k8s.io/karpenter/pkg/metrics"
	_ "sigs.k8s.io/karpenter/pkg/operator"
	_ "sigs.k8s.io/karpenter/pkg/state/cost"

	"github.com/dovetail/dovetail/test/karpenter/metrics/catalog"
)

const listPath = "../testdata/karpenter-metrics.json"

// Version is the Karpenter minor version this oracle reads.
const Version = "v1.15"

// Source names the modules the oracle reads.
const Source = "sigs.k8s.io/karpenter v1.15.0, github.com/aws/karpenter-provider-aws v1.15.0"

// registerAtStart registers the metrics Karpenter's operator registers when it starts rather than when its packages
// load: the status-condition metrics of the status controllers (built as sigs.k8s.io/karpenter's
// pkg/controllers.NewControllers (v1.15.0) and the AWS provider's build them, every feature gate on), and the AWS SDK
// metrics its operator attaches to the SDK configuration, and the node metrics (their label names come from
// the well-known labels, cloud provider ones included, so Karpenter makes them when it builds that controller).
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

// TestKarpenterMetricList reads every metric Karpenter registers and compares the list with the committed one.
// KARPENTER_METRICS_UPDATE=1 rewrites this version's part of the committed list instead.
func TestKarpenterMetricList(t *testing.T) {
	registerAtStart()
	got, err := catalog.FromRegistry(crmetrics.Registry, catalog.Kept)
	if err != nil {
		t.Fatal(err)
	}
	catalog.Check(t, filepath.FromSlash(listPath), Version, Source, got)
}
