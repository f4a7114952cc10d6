package scheduling_test

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
)

func service(ns, name string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: selector}}
}

func ownedBy(p *corev1.Pod, apiVersion, kind, name string) *corev1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}}
	return p
}

func TestDeduceSpreadSelector(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "hash": "1"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}}}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"},
		Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "old", "v": "2"}}}
	src := scheduling.SelectorSources{
		Services: []*corev1.Service{
			service("default", "web", map[string]string{"app": "web"}),
			service("default", "all", map[string]string{}),
			service("default", "headless", nil),
			service("other", "web", map[string]string{"app": "web", "ns": "other"}),
			service("default", "old", map[string]string{"v": "2"}),
		},
		ReplicaSets: []*appsv1.ReplicaSet{rs}, StatefulSets: []*appsv1.StatefulSet{ss},
		ReplicationControllers: []*corev1.ReplicationController{rc},
	}
	in := func(k, v string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want *metav1.LabelSelector
	}{
		{"selected by a Service only", test.SchedPod("a").Labels("app", "web").Obj(),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		{"nothing selects it", test.SchedPod("b").Labels("app", "none").Obj(), nil},
		{"a Service in another namespace does not count", test.SchedPod("c").Namespace("other").Labels("app", "x").Obj(), nil},
		{"ReplicaSet requirements added to the Service's labels",
			ownedBy(test.SchedPod("d").Labels("app", "web", "hash", "1", "tier", "f").Obj(), "apps/v1", "ReplicaSet", "web-1"),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web"), in("hash", "1"), {Key: "tier", Operator: metav1.LabelSelectorOpExists}}}},
		{"StatefulSet without a Service", ownedBy(test.SchedPod("e").Labels("app", "db").Obj(), "apps/v1", "StatefulSet", "db"),
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "db")}}},
		{"ReplicationController merged into the labels", ownedBy(test.SchedPod("f").Labels("app", "old", "v", "2").Obj(), "v1", "ReplicationController", "old"),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "old", "v": "2"}}},
		{"a Job contributes nothing", ownedBy(test.SchedPod("g").Labels("app", "job").Obj(), "batch/v1", "Job", "j"), nil},
		{"a missing owner contributes nothing", ownedBy(test.SchedPod("h").Labels("app", "web").Obj(), "apps/v1", "ReplicaSet", "gone"),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, scheduling.DeduceSpreadSelector(c.pod, src)); d != "" {
				t.Errorf("selector (-want +got):\n%s", d)
			}
		})
	}
}

func TestDefaultSpread(t *testing.T) {
	zone := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: corev1.DoNotSchedule}}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	webPods := func(n int) []*corev1.Pod {
		return pods(n, func(i int) *test.SchedPodBuilder {
			return test.SchedPod(fmt.Sprintf("p%d", i)).Requests("1", "1Gi").Labels("app", "web")
		})
	}
	selectors := func(ps []*corev1.Pod) map[types.NamespacedName]*metav1.LabelSelector {
		out := map[types.NamespacedName]*metav1.LabelSelector{}
		for _, p := range ps {
			out[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = web
		}
		return out
	}
	own := webPods(6)
	for _, p := range own {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: hostKey, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web}}
	}
	cases := []struct {
		name      string
		pods      []*corev1.Pod
		defaults  []corev1.TopologySpreadConstraint
		selectors func([]*corev1.Pod) map[types.NamespacedName]*metav1.LabelSelector
		nodes     []*scheduling.StateNode
		zones     map[string]int
		claims    int
	}{
		{name: "without defaults the pods share the cheapest zone", pods: webPods(6), selectors: selectors, zones: map[string]int{"a": 6}},
		{name: "a zone default spreads pods", pods: webPods(6), defaults: zone, selectors: selectors, zones: map[string]int{"a": 2, "b": 2, "c": 2}},
		{name: "the default counts existing pods its selector matches", pods: webPods(4), defaults: zone, selectors: selectors,
			nodes: []*scheduling.StateNode{test.SchedNode("n1", "1", "1Gi").Zone("a").Pods(test.SchedPod("old1").Labels("app", "web").Obj(), test.SchedPod("old2").Labels("app", "web").Obj()).Obj()},
			zones: map[string]int{"b": 2, "c": 2}},
		{name: "a pod without a deduced selector takes no default", pods: webPods(6), defaults: zone,
			selectors: func([]*corev1.Pod) map[types.NamespacedName]*metav1.LabelSelector { return nil }, zones: map[string]int{"a": 6}},
		{name: "a pod's own constraints win", pods: own, defaults: []corev1.TopologySpreadConstraint{{MaxSkew: 6, TopologyKey: hostKey, WhenUnsatisfiable: corev1.DoNotSchedule}},
			selectors: selectors, claims: 6},
		{name: "a hostname default spreads pods over nodes", pods: webPods(4), selectors: selectors,
			defaults: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: hostKey, WhenUnsatisfiable: corev1.DoNotSchedule}}, claims: 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := make([]*corev1.Pod, len(c.pods))
			for i, p := range c.pods {
				before[i] = p.DeepCopy()
			}
			snap := &scheduling.Snapshot{Pods: c.pods, Nodes: c.nodes, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": standardTypes()},
				DefaultSpread: c.defaults, SpreadSelectors: c.selectors(c.pods)}
			plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			got := map[string]int{}
			for _, nc := range plan.NodeClaims {
				got[nc.Zone] += len(nc.Pods)
			}
			if d := cmp.Diff(c.zones, got); c.zones != nil && d != "" {
				t.Errorf("pods per zone (-want +got):\n%s", d)
			}
			if c.claims > 0 && len(plan.NodeClaims) != c.claims {
				t.Errorf("nodeclaims = %d, want %d", len(plan.NodeClaims), c.claims)
			}
			if d := cmp.Diff(before, c.pods); d != "" {
				t.Errorf("the snapshot's pods changed (-before +after):\n%s", d)
			}
		})
	}
}
