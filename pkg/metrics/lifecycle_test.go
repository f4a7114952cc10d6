package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// TestLifecycleCounters: the created and terminated counters carry Karpenter's labels, read from the objects.
func TestLifecycleCounters(t *testing.T) {
	m := NewForTest()
	labels := map[string]string{karpv1.NodePoolLabelKey: "default", karpv1.CapacityTypeLabelKey: "spot", corev1.LabelTopologyZone: "us-west-2a"}
	relaxed := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: labels,
		Annotations: map[string]string{karpv1.NodeClaimMinValuesRelaxedAnnotationKey: "true"}}}
	plain := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	m.CountNodeClaimCreated("provisioned", "default", relaxed)
	m.CountNodeClaimCreated("drifted", "default", plain)
	m.CountNodeClaimTerminated(plain)
	m.CountNodeCreated(plain)
	m.CountNodeTerminated(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}})
	var got string
	for _, c := range []prometheus.Collector{m.NodeClaimsCreated, m.NodeClaimsTerminated, m.NodesCreated, m.NodesTerminated} {
		_, text := gatherText(t, c)
		got += text
	}
	for _, want := range []string{
		`karpenter_nodeclaims_created_total{min_values_relaxed="true",nodepool="default",reason="provisioned"} 1`,
		`karpenter_nodeclaims_created_total{min_values_relaxed="false",nodepool="default",reason="drifted"} 1`,
		`karpenter_nodeclaims_terminated_total{capacity_type="spot",nodepool="default",zone="us-west-2a"} 1`,
		`karpenter_nodes_created_total{nodepool="default",zone="us-west-2a"} 1`,
		`karpenter_nodes_terminated_total{nodepool="default",zone="us-west-2a"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in:\n%s", want, got)
		}
	}
}

// TestStartSchedulingPass: each pass has a series of its own, the earlier passes' go, and a finished pass reads 0.
func TestStartSchedulingPass(t *testing.T) {
	m := NewForTest()
	m.StartSchedulingPass("provisioner", 3)()
	done := m.StartSchedulingPass("provisioner", 5)
	m.StartSchedulingPass("other", 1)
	byController, ids := queueDepths(t, m)
	if diff := cmp.Diff(map[string][]float64{"provisioner": {5}, "other": {1}}, byController); diff != "" {
		t.Errorf("queue depth by controller (-want +got):\n%s", diff)
	}
	if len(ids) != 2 || ids[""] {
		t.Errorf("scheduling ids %v, want two non-empty ones", ids)
	}
	done()
	if got, _ := queueDepths(t, m); !cmp.Equal(got["provisioner"], []float64{0}) {
		t.Errorf("depth after the pass = %v, want [0]", got["provisioner"])
	}
}

// queueDepths reads karpenter_scheduler_queue_depth: the values by controller and the scheduling ids.
func queueDepths(t *testing.T, m *Metrics) (map[string][]float64, map[string]bool) {
	t.Helper()
	families, _ := gatherText(t, m.SchedulerQueueDepth)
	byController := map[string][]float64{}
	ids := map[string]bool{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			var controller string
			for _, l := range s.GetLabel() {
				switch l.GetName() {
				case LabelController:
					controller = l.GetValue()
				case LabelSchedulingID:
					ids[l.GetValue()] = true
				}
			}
			byController[controller] = append(byController[controller], s.GetGauge().GetValue())
		}
	}
	return byController, ids
}

// TestSetNodePoolCost: the NodePool's NodeClaims are priced from the instance types last returned for it; one not
// launched, or on an unknown offering, adds nothing.
func TestSetNodePoolCost(t *testing.T) {
	m := NewForTest()
	m.InstanceTypeOfferingPrice.Record("default", []*cloudprovider.InstanceType{{Name: "m5.large", Offerings: []cloudprovider.Offering{
		{CapacityType: "spot", Zone: "us-west-2a", Price: 0.04}, {CapacityType: "on-demand", Zone: "us-west-2a", Price: 0.096},
	}}})
	claim := func(instanceType, capacityType, zone string) karpv1.NodeClaim {
		return karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelInstanceTypeStable: instanceType,
			karpv1.CapacityTypeLabelKey: capacityType, corev1.LabelTopologyZone: zone}}}
	}
	m.SetNodePoolCost("default", []karpv1.NodeClaim{
		claim("m5.large", "spot", "us-west-2a"), claim("m5.large", "spot", "us-west-2a"), claim("m5.large", "on-demand", "us-west-2a"),
		claim("m5.large", "spot", "us-west-2b"), {},
	})
	if got, want := testutil.ToFloat64(m.NodePoolCost.WithLabelValues("default")), 0.176; math.Abs(got-want) > 1e-9 {
		t.Errorf("karpenter_nodepools_cost_total{nodepool=default} = %v, want %v", got, want)
	}
}

// TestCostTrackerErrors: a launched NodeClaim whose offering is not priced is counted once while it stays unpriced,
// again after it was priced in between; NodeClaims not launched yet, and NodePools with no instance types recorded
// (the first counts after a start), count nothing.
func TestCostTrackerErrors(t *testing.T) {
	m := NewForTest()
	claim := func(name, instanceType string) karpv1.NodeClaim {
		return karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: instanceType,
			karpv1.CapacityTypeLabelKey: "spot", corev1.LabelTopologyZone: "us-west-2a"}}}
	}
	notLaunched := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	m5 := []*cloudprovider.InstanceType{{Name: "m5.large", Offerings: []cloudprovider.Offering{{CapacityType: "spot", Zone: "us-west-2a", Price: 0.04}}}}
	steps := []struct {
		name   string
		record []*cloudprovider.InstanceType
		claims []karpv1.NodeClaim
		want   float64
		forget bool
	}{
		{name: "no instance types recorded yet", claims: []karpv1.NodeClaim{claim("a", "c7i.large")}, want: 0},
		{name: "one unpriced", record: m5, claims: []karpv1.NodeClaim{claim("a", "c7i.large"), claim("b", "m5.large"), notLaunched}, want: 1},
		{name: "still unpriced: not counted again", claims: []karpv1.NodeClaim{claim("a", "c7i.large"), claim("b", "m5.large")}, want: 1},
		{name: "a second one", claims: []karpv1.NodeClaim{claim("a", "c7i.large"), claim("c", "r5.large")}, want: 2},
		{name: "priced now", record: append(m5, &cloudprovider.InstanceType{Name: "c7i.large", Offerings: []cloudprovider.Offering{{CapacityType: "spot", Zone: "us-west-2a", Price: 0.05}}}),
			claims: []karpv1.NodeClaim{claim("a", "c7i.large")}, want: 2},
		{name: "unpriced again", record: m5, claims: []karpv1.NodeClaim{claim("a", "c7i.large")}, want: 3},
		{name: "forgotten NodePool", forget: true, claims: []karpv1.NodeClaim{claim("a", "c7i.large")}, want: 4},
	}
	for _, s := range steps {
		if s.record != nil {
			m.InstanceTypeOfferingPrice.Record("default", s.record)
		}
		if s.forget {
			m.ForgetNodePoolCost("default")
		}
		m.SetNodePoolCost("default", s.claims)
		if got := testutil.ToFloat64(m.CostTrackerErrors.Errors("default")); got != s.want {
			t.Errorf("%s: karpenter_nodepools_cost_tracker_errors_total{nodepool=default} = %v, want %v", s.name, got, s.want)
		}
	}
}
