package scheduling_test

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestExchange starts from hand-built nodes (not first-fit-decreasing) and checks what the improvement pass makes of
// them with and without its exchange step. Node A holds an anchored pod (hostname anti-affinity) of 1 cpu and pod
// a of 1.25 cpu: 2.25 cpu, so it needs the 4-cpu type although it is only 0.25 cpu above the 2-cpu one. Node B holds
// an anchored pod of 1.5 cpu and pods b1 of 1 cpu and b2 of 1.1 cpu: 3.6 cpu on the 4-cpu type, 0.4 cpu of room.
// Moving pods does not help (a does not fit B's room; B would have to shed 1.6 cpu and A holds only one of its
// pods), but swapping a for b1 does: A drops to 2 cpu and B rises to 3.85 (swapping it for b2 would leave A at 2.1).
func TestExchange(t *testing.T) {
	types := []*cloudprovider.InstanceType{
		test.SchedInstanceType("two", "2", "8Gi").Zones(0.10, "a", "b").Obj(),
		test.SchedInstanceType("four", "4", "16Gi").Zones(0.20, "a", "b").Obj(),
	}
	anchor := func(name, cpu string) *corev1.Pod {
		return test.SchedPod(name).Requests(cpu, "100Mi").Labels("app", "x").PodAntiAffinity(corev1.LabelHostname, "app", "x").Obj()
	}
	plain := func(name, cpu string) *test.SchedPodBuilder { return test.SchedPod(name).Requests(cpu, "100Mi") }
	spread := func(b *test.SchedPodBuilder) *test.SchedPodBuilder {
		return b.Labels("k", "v").HostnameSpread(1, "k", "v")
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		// want is each node's pods after the pass with the exchange step; without it nothing changes
		want map[string][]string
		cost float64
	}{
		{
			name: "a swap lets a node drop to the smaller type",
			pods: []*corev1.Pod{anchor("xa", "1"), plain("a", "1250m").Obj(), anchor("xb", "1500m"),
				plain("b1", "1").Obj(), plain("b2", "1100m").Obj()},
			want: map[string][]string{"xa": {"b1", "xa"}, "xb": {"a", "b2", "xb"}},
			cost: 0.30,
		},
		{
			name: "no swap that would put a hostname spread pod next to a pod it matches",
			pods: []*corev1.Pod{anchor("xa", "1"), spread(plain("a", "1250m")).Obj(), anchor("xb", "1500m"),
				plain("b1", "1").Labels("k", "v").Obj(), plain("b2", "1100m").Labels("k", "v").Obj()},
			want: map[string][]string{"xa": {"a", "xa"}, "xb": {"b1", "b2", "xb"}},
			cost: 0.40,
		},
		{
			name: "no swap across zones",
			pods: []*corev1.Pod{anchor("xa", "1"), plain("a", "1250m").Zone("a").Obj(), anchor("xb", "1500m"),
				plain("b1", "1").Zone("b").Obj(), plain("b2", "1100m").Zone("b").Obj()},
			want: map[string][]string{"xa": {"a", "xa"}, "xb": {"b1", "b2", "xb"}},
			cost: 0.40,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &scheduling.Snapshot{
				Pods:          tc.pods,
				NodePools:     []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": types},
			}
			nodes := [][]string{{"xa", "a"}, {"xb", "b1", "b2"}}
			without, err := scheduling.SolvePlaced(snap, nodes, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string][]string{"xa": {"a", "xa"}, "xb": {"b1", "b2", "xb"}}, byAnchor(without)); diff != "" {
				t.Errorf("without the exchange step (-want +got):\n%s", diff)
			}
			plan, err := scheduling.SolvePlaced(snap, nodes, false, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, byAnchor(plan)); diff != "" {
				t.Errorf("with the exchange step (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cost, plan.Cost, cmpFloat); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
			if plan.Cost > without.Cost+1e-9 {
				t.Errorf("cost %.2f with the exchange step, %.2f without", plan.Cost, without.Cost)
			}
			if v := oracle.Check(snap, plan); len(v) > 0 {
				t.Errorf("%d oracle violations, first: %s", len(v), v[0])
			}
		})
	}
}

var cmpFloat = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })

// byAnchor names each new node by its pod whose name starts with x and lists its pods, sorted.
func byAnchor(plan *scheduling.Plan) map[string][]string {
	out := map[string][]string{}
	for _, nc := range plan.NodeClaims {
		var names []string
		anchor := ""
		for _, p := range nc.Pods {
			names = append(names, p.Name)
			if p.Name[0] == 'x' {
				anchor = p.Name
			}
		}
		sort.Strings(names)
		out[anchor] = names
	}
	return out
}
