package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestNodeSeries: a count sums the requests of the pods bound to each node (terminal pods left out, DaemonSet
// pods also apart) and sets the cluster utilization and the cluster-state gauges.
func TestNodeSeries(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	node := test.Node("ip-1", "fake:///a/i-1").Label(karpv1.NodePoolLabelKey, "web").Capacity(corev1.ResourceCPU, "4").Obj()
	done := test.Pod("done").Requests("2", "1Gi").NodeName("ip-1").Phase(corev1.PodSucceeded).Obj()
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(node,
		test.Pod("app").Requests("1", "1Gi").NodeName("ip-1").Phase(corev1.PodRunning).Obj(),
		test.Pod("ds").Requests("500m", "100Mi").NodeName("ip-1").OwnedBy("apps/v1", "DaemonSet", "agent").Phase(corev1.PodRunning).Obj(),
		done, test.Pod("pending").Requests("8", "1Gi").Obj(),
	).Build()
	m := metrics.NewForTest()
	if err := NewController(deps.Deps{Client: kube, Metrics: m}).Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	scraped, err := testutil.CollectAndFormat(m.Nodes, expfmt.TypeTextPlain, "karpenter_nodes_total_pod_requests", "karpenter_nodes_total_daemon_requests", "karpenter_cluster_utilization_percent")
	if err != nil {
		t.Fatal(err)
	}
	body := string(scraped)
	for _, want := range []string{
		`managed="true",node_name="ip-1",nodepool="web",os="",phase="",placement_group_id="",placement_group_partition="",region="",resource_type="cpu",windows_build="",zone="",zone_id=""} 1.5`,
		`managed="true",node_name="ip-1",nodepool="web",os="",phase="",placement_group_id="",placement_group_partition="",region="",resource_type="cpu",windows_build="",zone="",zone_id=""} 0.5`,
		`karpenter_cluster_utilization_percent{resource_type="cpu"} 37.5`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	if got := testutil.ToFloat64(m.ClusterStateSynced); got != 1 {
		t.Errorf("karpenter_cluster_state_synced = %v, want 1", got)
	}
}
