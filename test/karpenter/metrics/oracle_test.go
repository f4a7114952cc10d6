package metrics

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
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/health"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination/terminator"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/lifecycle"
	_ "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	_ "sigs.k8s.io/karpenter/pkg/controllers/state"
	_ "sigs.k8s.io/karpenter/pkg/metrics"
	_ "sigs.k8s.io/karpenter/pkg/operator"
	_ "sigs.k8s.io/karpenter/pkg/state/cost"

	"github.com/dovetail/dovetail/test/karpenter/metrics/catalog"
	"github.com/dovetail/dovetail/test/karpenter/metrics/oracle"
)

const listPath = "testdata/karpenter-metrics.json"

// TestKarpenterMetricList reads every metric Karpenter registers and compares the list with the committed one.
// KARPENTER_METRICS_UPDATE=1 rewrites this version's part of the committed list instead.
func TestKarpenterMetricList(t *testing.T) {
	got := oracle.Run(t, filepath.FromSlash(listPath), Version, Source)
	catalog.CrossCheck(t, filepath.FromSlash("testdata/reference-v1.14.txt"), got, referenceDifferences)
}

// referenceDifferences are the names on which Karpenter v1.14's reference page and its packages differ, and why.
// The page is generated from the source of the core and AWS provider, so metrics other modules register, and
// those registered only when a feature runs, are where they differ.
var referenceDifferences = map[string]string{
	"leader_election_slowpath_total":                                  "controller-runtime registers it only once a leader lease is renewed the slow way",
	"controller_runtime_webhook_latency_seconds":                      "controller-runtime's webhook server metric; the page lists no webhook metric",
	"controller_runtime_webhook_panics_total":                         "controller-runtime's webhook server metric; the page lists no webhook metric",
	"controller_runtime_webhook_requests_in_flight":                   "controller-runtime's webhook server metric; the page lists no webhook metric",
	"controller_runtime_webhook_requests_total":                       "controller-runtime's webhook server metric; the page lists no webhook metric",
	"karpenter_ec2nodeclasses_userdata_bytes":                         "added in v1.14.3; the page was written for v1.14.0",
	"operator_capacitybuffer_status_condition_count":                  "status metrics of the CapacityBuffer feature gate, built at start and missed by the page's generator",
	"operator_capacitybuffer_status_condition_current_status_seconds": "as operator_capacitybuffer_status_condition_count",
	"operator_capacitybuffer_status_condition_transition_seconds":     "as operator_capacitybuffer_status_condition_count",
	"operator_capacitybuffer_status_condition_transitions_total":      "as operator_capacitybuffer_status_condition_count",
	"operator_capacitybuffer_termination_current_time_seconds":        "as operator_capacitybuffer_status_condition_count",
	"operator_capacitybuffer_termination_duration_seconds":            "as operator_capacitybuffer_status_condition_count",
}
