package v115

import (
	"path/filepath"
	"testing"

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

	"github.com/dovetail/dovetail/test/karpenter/metrics/oracle"
)

const listPath = "../testdata/karpenter-metrics.json"

// Version is the Karpenter minor version this oracle reads.
const Version = "v1.15"

// Source names the modules the oracle reads.
const Source = "sigs.k8s.io/karpenter v1.15.0, github.com/aws/karpenter-provider-aws v1.15.0"

// TestKarpenterMetricList reads every metric Karpenter registers and compares the list with the committed one.
// KARPENTER_METRICS_UPDATE=1 rewrites this version's part of the committed list instead.
func TestKarpenterMetricList(t *testing.T) {
	oracle.Run(t, filepath.FromSlash(listPath), Version, Source)
}
