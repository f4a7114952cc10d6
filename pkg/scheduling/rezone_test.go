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

// TestRezone starts from five hand-built nodes of the 2-cpu type, one pod of 1.5 cpu each, all labelled k=v: s1 and
// s2 carry a zone spread constraint on k=v (maxSkew 1), g1, g2 and g3 do not. The type costs 0.10 in zone a, 0.11
// in b and 0.08 in c. Placement keeps every matching pod balanced: s1 and g2 in c, s2 and g3 in a, g1 in b (0.47).
// Only the bound pods' skew has to hold: with s1 and s2 in a and b, one each, and g1, g2 and g3 in c, the smallest
// count is 1 and neither bound pod's zone holds more (0.45). The rezone step gets there by swapping s1 and g1 (same
// requests, same groups matching them) and pinning g3's node to zone c. When s1 stays in zone c (pods with host
// ports are not moved), every zone must stay within one pod of the others: moving g3's node (or g1's) to zone c
// would leave zone c two pods above zone a (or b), and no node moves.
func TestRezone(t *testing.T) {
	od := cloudprovider.CapacityTypeOnDemand
	types := []*cloudprovider.InstanceType{
		test.SchedInstanceType("two", "2", "8Gi").Offering("a", od, 0.10).Offering("b", od, 0.11).Offering("c", od, 0.08).Obj(),
	}
	pod := func(name string) *test.SchedPodBuilder {
		return test.SchedPod(name).Requests("1500m", "100Mi").Labels("k", "v")
	}
	placed := map[string]string{"s1": "c", "s2": "a", "g1": "b", "g2": "c", "g3": "a"}
	for _, tc := range []struct {
		name string
		s1   *test.SchedPodBuilder
		// want is each pod's zone after the pass with the rezone step
		want map[string]string
		cost float64
	}{
		{
			name: "the unbound pods go to the cheap zone, the bound ones to the others",
			s1:   pod("s1").ZoneSpread(1, "k", "v"),
			want: map[string]string{"s1": "b", "s2": "a", "g1": "c", "g2": "c", "g3": "c"},
			cost: 0.45,
		},
		{
			name: "a bound pod that stays in the cheap zone keeps every zone within one pod of the others",
			s1:   pod("s1").ZoneSpread(1, "k", "v").HostPort(8080),
			want: placed,
			cost: 0.47,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &scheduling.Snapshot{
				Pods: []*corev1.Pod{tc.s1.Obj(), pod("s2").ZoneSpread(1, "k", "v").Obj(), pod("g1").Obj(), pod("g2").Obj(),
					pod("g3").Obj()},
				NodePools:     []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": types},
			}
			nodes := [][]string{{"s1"}, {"s2"}, {"g1"}, {"g2"}, {"g3"}}
			without, err := scheduling.SolvePlacedRezone(snap, nodes, false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(placed, zoneOfPods(without)); diff != "" {
				t.Errorf("without the rezone step (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(0.47, without.Cost, cmpFloat); diff != "" {
				t.Errorf("cost without the rezone step (-want +got):\n%s", diff)
			}
			plan, err := scheduling.SolvePlacedRezone(snap, nodes, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, zoneOfPods(plan)); diff != "" {
				t.Errorf("with the rezone step (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cost, plan.Cost, cmpFloat); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
			for _, nc := range plan.NodeClaims {
				if len(nc.InstanceTypeOptions) == 0 || nc.InstanceTypeOptions[0].Zone != nc.Zone {
					t.Errorf("%s: zone %s, options %v", nc.Name, nc.Zone, nc.InstanceTypeOptions)
				}
			}
			if v := oracle.Check(snap, plan); len(v) > 0 {
				t.Errorf("%d oracle violations, first: %s", len(v), v[0])
			}
		})
	}
}

// zoneOfPods maps each pod planned on a new node to the node's zone.
func zoneOfPods(plan *scheduling.Plan) map[string]string {
	out := map[string]string{}
	for _, nc := range plan.NodeClaims {
		names := make([]string, 0, len(nc.Pods))
		for _, p := range nc.Pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		for _, n := range names {
			out[n] = nc.Zone
		}
	}
	return out
}
