package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestObjectConditions: at each scrape, a series a condition of every listed object (count 1 and the time in its
// status), the per-kind series with the kind's object labels, the kind-labelled ones for NodeClaims, NodePools
// and EC2NodeClasses only, and the termination gauge for objects being deleted; an object no longer listed has
// no series.
func TestObjectConditions(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	o := NewObjectConditions(func() time.Time { return t0 })
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(t0.Add(-90 * time.Second))}
	nodes := []ConditionedObject{{Name: "ip-10-0-0-1", Labels: map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true", "karpenter.k8s.aws/ec2nodeclass": "default"},
		Conditions: []metav1.Condition{ready}, DeletionTimestamp: t0.Add(-30 * time.Second)}}
	o.SetLister(KindNode, func() []ConditionedObject { return nodes })
	o.SetLister(KindNodePool, func() []ConditionedObject {
		return []ConditionedObject{{Name: "default", Conditions: []metav1.Condition{ready, ready}}}
	})
	want := `
# HELP operator_node_status_condition_count Current conditions of each Node, 1 a condition (type, status and reason).
# TYPE operator_node_status_condition_count gauge
operator_node_status_condition_count{karpenter_k8s_aws_ec2nodeclass="default",karpenter_sh_initialized="true",karpenter_sh_nodepool="default",name="ip-10-0-0-1",namespace="",reason="Ready",status="True",type="Ready"} 1
# HELP operator_node_status_condition_current_status_seconds Time each Node condition has held its current status.
# TYPE operator_node_status_condition_current_status_seconds gauge
operator_node_status_condition_current_status_seconds{karpenter_k8s_aws_ec2nodeclass="default",karpenter_sh_initialized="true",karpenter_sh_nodepool="default",name="ip-10-0-0-1",namespace="",reason="Ready",status="True",type="Ready"} 90
# HELP operator_node_termination_current_time_seconds Time since the deletion of each Node being deleted was requested.
# TYPE operator_node_termination_current_time_seconds gauge
operator_node_termination_current_time_seconds{karpenter_k8s_aws_ec2nodeclass="default",karpenter_sh_initialized="true",karpenter_sh_nodepool="default",name="ip-10-0-0-1",namespace=""} 30
# HELP operator_nodepool_status_condition_count Current conditions of each NodePool, 1 a condition (type, status and reason).
# TYPE operator_nodepool_status_condition_count gauge
operator_nodepool_status_condition_count{name="default",namespace="",reason="Ready",status="True",type="Ready"} 1
# HELP operator_status_condition_count ` + helpOf("operator_status_condition_count") + `
# TYPE operator_status_condition_count gauge
operator_status_condition_count{group="karpenter.sh",kind="NodePool",name="default",namespace="",reason="Ready",status="True",type="Ready"} 1
`
	names := []string{"operator_node_status_condition_count", "operator_node_status_condition_current_status_seconds",
		"operator_node_termination_current_time_seconds", "operator_nodepool_status_condition_count", "operator_status_condition_count"}
	if err := testutil.CollectAndCompare(o, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if err := prometheus.NewPedanticRegistry().Register(o); err != nil {
		t.Fatal(err)
	}
	nodes = nil
	if n := testutil.CollectAndCount(o, "operator_node_status_condition_count", "operator_node_termination_current_time_seconds"); n != 0 {
		t.Errorf("%d Node series after the Node is gone, want 0", n)
	}
}

// TestRecordConditionChange: a status change counts a transition to the new status and reason and observes the
// time the old status held; an unchanged status counts nothing; NodePools count in the kind-labelled metrics too,
// Nodes do not; NodeClaims are left to their status writes.
func TestRecordConditionChange(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	m := NewForTest()
	unknown := metav1.Condition{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation", LastTransitionTime: metav1.NewTime(t0)}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(t0.Add(4 * time.Second))}
	m.RecordConditionChange(KindNodePool, nil, []metav1.Condition{unknown}, []metav1.Condition{ready})
	m.RecordConditionChange(KindNodePool, nil, []metav1.Condition{ready}, []metav1.Condition{ready})
	labels := map[string]string{"karpenter.sh/nodepool": "default"}
	m.RecordConditionChange(KindNode, labels, nil, []metav1.Condition{ready})
	m.RecordConditionChange(KindNodeClaim, nil, []metav1.Condition{unknown}, []metav1.Condition{ready})
	pools := m.ObjectChanges.kinds[KindNodePool]
	if got := testutil.ToFloat64(pools.transitions.WithLabelValues("Ready", "True", "Ready")); got != 1 {
		t.Errorf("nodepool transitions{Ready,True} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.ConditionTransitions.WithLabelValues("karpenter.sh", "NodePool", "Ready", "True", "Ready")); got != 1 {
		t.Errorf("operator_status_condition_transitions_total{NodePool} = %v, want 1", got)
	}
	if got, want := observations(t, pools.transitionSeconds), []string{"Unknown/Ready 1 4"}; strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("nodepool transition_seconds = %v, want %v", got, want)
	}
	nodes := m.ObjectChanges.kinds[KindNode]
	if got := testutil.ToFloat64(nodes.transitions.WithLabelValues("Ready", "True", "Ready", "", "default", "")); got != 1 {
		t.Errorf("node transitions{Ready,True,nodepool=default} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(nodes.transitionSeconds); n != 0 {
		t.Errorf("node transition_seconds has %d series for a new condition, want 0", n)
	}
	if n := testutil.CollectAndCount(m.ConditionTransitions); n != 1 {
		t.Errorf("operator_status_condition_transitions_total has %d series, want 1 (the NodePool's; Nodes are not kind-labelled, NodeClaims recorded elsewhere)", n)
	}
	if n := testutil.CollectAndCount(m.NodeClaimConditionTransitions); n != 0 {
		t.Errorf("NodeClaim transitions recorded by the watch: %d series", n)
	}
}

// TestRecordTermination: the time from the deletion request to the object's end, per kind and kind-labelled; an
// object deleted without a deletion timestamp is not observed.
func TestRecordTermination(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	m := NewForTest()
	m.RecordTermination(KindEC2NodeClass, nil, t0, t0.Add(3*time.Second))
	m.RecordTermination(KindNode, map[string]string{"karpenter.sh/nodepool": "default"}, t0, t0.Add(time.Minute))
	m.RecordTermination(KindNodePool, nil, time.Time{}, t0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.ObjectChanges.generic)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		for _, series := range f.GetMetric() {
			var labels []string
			for _, l := range series.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got = append(got, fmt.Sprintf("%s %d %g", strings.Join(labels, ","), series.GetHistogram().GetSampleCount(), series.GetHistogram().GetSampleSum()))
		}
	}
	if want := []string{"group=karpenter.k8s.aws,kind=EC2NodeClass 1 3"}; strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("operator_termination_duration_seconds = %v, want %v", got, want)
	}
	if n := testutil.CollectAndCount(m.ObjectChanges.kinds[KindNode].terminations); n != 1 {
		t.Errorf("node termination series = %d, want 1", n)
	}
	if n := testutil.CollectAndCount(m.ObjectChanges.kinds[KindNodePool].terminations); n != 0 {
		t.Errorf("nodepool termination series = %d, want 0 (no deletion timestamp)", n)
	}
}
