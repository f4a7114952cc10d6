package oracle_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
	"github.com/dovetail/dovetail/test/oracle"
)

// TestDefaultSpread plans pods without constraints of their own under SCHEDULER_CONFIG-style default constraints
// and checks the plans with the upstream PodTopologySpread plugin configured with the same defaults, deducing the
// selectors itself from the same Services and controllers. A plan made without the defaults must fail the check.
func TestDefaultSpread(t *testing.T) {
	sources := scheduling.SelectorSources{
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}},
		ReplicaSets: []*appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "hash": "1"}}}}},
		StatefulSets: []*appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}},
	}
	owned := func(p *corev1.Pod, kind, name string) *corev1.Pod {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}}
		return p
	}
	var pending []*corev1.Pod
	for i := 0; i < 7; i++ {
		pending = append(pending, owned(test.SchedPod(fmt.Sprintf("web-%d", i)).Requests("1", "1Gi").Labels("app", "web", "hash", "1").Obj(), "ReplicaSet", "web-1"))
	}
	for i := 0; i < 4; i++ {
		pending = append(pending, owned(test.SchedPod(fmt.Sprintf("db-%d", i)).Requests("500m", "1Gi").Labels("app", "db").Obj(), "StatefulSet", "db"))
	}
	pending = append(pending, test.SchedPod("lone").Requests("1", "1Gi").Labels("app", "lone").Obj())
	existing := []*scheduling.StateNode{test.SchedNode("n1", "8", "32Gi").Zone("a").
		Pods(test.SchedPod("web-old").Labels("app", "web", "hash", "1").Obj()).Obj(),
		test.SchedNode("n2", "1", "4Gi").Zone("b").Obj(), test.SchedNode("n3", "1", "4Gi").Zone("c").Obj()}
	types3 := []*cloudprovider.InstanceType{test.SchedInstanceType("m.xlarge", "4", "16Gi").Zones(0.2, "a", "b", "c").Obj()}

	for _, tc := range []struct {
		name     string
		defaults []corev1.TopologySpreadConstraint
	}{
		{"zone DoNotSchedule", []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}},
		{"zone and hostname", []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule},
			{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			snap := &scheduling.Snapshot{Pods: pending, Nodes: existing, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": types3}}
			unaware, err := scheduling.Solve(ctx, snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			snap.DefaultSpread = tc.defaults
			snap.SpreadSelectors = map[types.NamespacedName]*metav1.LabelSelector{}
			for _, p := range pending {
				if sel := scheduling.DeduceSpreadSelector(p, sources); sel != nil {
					snap.SpreadSelectors[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = sel
				}
			}
			plan, err := scheduling.Solve(ctx, snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("unschedulable: %v", plan.Unschedulable)
			}
			v, err := oracle.Check(ctx, snap, plan, oracle.Options{Selectors: sources, Order: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]oracle.Violation(nil), v); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
			v, err = oracle.Check(ctx, snap, unaware, oracle.Options{Selectors: sources})
			if err != nil {
				t.Fatal(err)
			}
			if len(v) == 0 {
				t.Errorf("a plan made without the default constraints passes the check with them")
			}
		})
	}
}
