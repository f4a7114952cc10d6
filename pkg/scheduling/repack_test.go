package scheduling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestRepack starts from three hand-built nodes, each an anchored pod of 1 cpu (hostname anti-affinity) and a pod
// of 1.75 cpu on the 4-cpu type (0.20 each). The 8-cpu type costs 0.25: the three 1.75-cpu pods together on one node
// of it, the other two nodes on the 2-cpu type, cost 0.45. No single move or swap gets there (a pod of 1.75 cpu
// finds 1.25 cpu of room at most, and there is no smaller pod to swap it for); lifting the pods off the three
// nodes and putting them back does.
func TestRepack(t *testing.T) {
	types := []*cloudprovider.InstanceType{
		test.SchedInstanceType("two", "2", "8Gi").Zones(0.10, "a").Obj(),
		test.SchedInstanceType("four", "4", "16Gi").Zones(0.20, "a").Obj(),
		test.SchedInstanceType("eight", "8", "32Gi").Zones(0.25, "a").Obj(),
	}
	anchor := func(name string) *corev1.Pod {
		return test.SchedPod(name).Requests("1", "100Mi").Labels("app", "x").PodAntiAffinity(corev1.LabelHostname, "app", "x").Obj()
	}
	start := map[string][]string{"xa": {"a", "xa"}, "xb": {"b", "xb"}, "xc": {"c", "xc"}}
	for _, tc := range []struct {
		name string
		pod  func(name string) *test.SchedPodBuilder
		want map[string][]string
		cost float64
	}{
		{
			name: "the three pods share the 8-cpu node",
			pod:  func(name string) *test.SchedPodBuilder { return test.SchedPod(name).Requests("1750m", "100Mi") },
			want: map[string][]string{"xa": {"a", "b", "c", "xa"}, "xb": {"xb"}, "xc": {"xc"}},
			cost: 0.45,
		},
		{
			name: "hostname spread keeps them apart",
			pod: func(name string) *test.SchedPodBuilder {
				return test.SchedPod(name).Requests("1750m", "100Mi").Labels("k", "v").HostnameSpread(1, "k", "v")
			},
			want: start,
			cost: 0.60,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &scheduling.Snapshot{
				Pods: []*corev1.Pod{anchor("xa"), anchor("xb"), anchor("xc"), tc.pod("a").Obj(), tc.pod("b").Obj(),
					tc.pod("c").Obj()},
				NodePools:     []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": types},
			}
			nodes := [][]string{{"xa", "a"}, {"xb", "b"}, {"xc", "c"}}
			without, err := scheduling.SolvePlaced(snap, nodes, false, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(start, byAnchor(without)); diff != "" {
				t.Errorf("without the repack step (-want +got):\n%s", diff)
			}
			plan, err := scheduling.SolvePlaced(snap, nodes, true, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, byAnchor(plan)); diff != "" {
				t.Errorf("with the repack step (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cost, plan.Cost, cmpFloat); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
			if v := oracle.Check(snap, plan); len(v) > 0 {
				t.Errorf("%d oracle violations, first: %s", len(v), v[0])
			}
		})
	}
}

// TestZoneTies: when topology leaves a choice between zones with as many matching pods, a new node goes to the
// zone where it is cheapest; balance still comes first.
func TestZoneTies(t *testing.T) {
	types := map[string][]*cloudprovider.InstanceType{"default": {
		test.SchedInstanceType("s.large", "2", "8Gi").Offering("a", cloudprovider.CapacityTypeOnDemand, 0.12).
			Offering("b", cloudprovider.CapacityTypeOnDemand, 0.11).Offering("c", cloudprovider.CapacityTypeOnDemand, 0.10).Obj(),
	}}
	web := func(b *test.SchedPodBuilder) *test.SchedPodBuilder {
		return b.Labels("app", "web").ZoneSpread(1, "app", "web").PodAntiAffinity(hostKey, "app", "web")
	}
	runAll(t, []tcase{
		{name: "one spread pod goes to the cheapest zone", types: types,
			pods: []*corev1.Pod{web(test.SchedPod("web-0").Requests("1", "1Gi")).Obj()},
			want: map[string]string{"web-0": "0/s.large/c/on-demand"}},
		{name: "four spread pods: one per zone, the fourth in the cheapest", types: types,
			pods: pods(4, func(i int) *test.SchedPodBuilder {
				return web(test.SchedPod("web-"+string(rune('0'+i))).Requests("1", "1Gi"))
			}),
			want: map[string]string{"web-0": "0/s.large/c/on-demand", "web-1": "1/s.large/b/on-demand",
				"web-2": "2/s.large/a/on-demand", "web-3": "3/s.large/c/on-demand"}},
	})
}
