package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// wideCatalog is n instance types that all fit a 1500m pod ("t00" … ), each 4 cpu and 16Gi, on-demand from $0.20/h
// and spot from $0.05/h, each a cent dearer than the one before; family labels cycle over families.
func wideCatalog(n, families int) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for i := range n {
		out = append(out, test.SchedInstanceType(fmt.Sprintf("t%02d", i), "4", "16Gi").
			Label("karpenter.k8s.aws/instance-family", fmt.Sprintf("f%d", i%families)).
			Offering("a", karpv1.CapacityTypeOnDemand, 0.20+0.01*float64(i)).
			Offering("a", karpv1.CapacityTypeSpot, 0.05+0.01*float64(i)).Obj())
	}
	return out
}

// wideWorld is world with wideCatalog and the scheduler's NodePool given.
func wideWorld(types []*cloudprovider.InstanceType, pool *scheduling.NodePool, cands ...*disruption.Candidate) *disruption.Snapshot {
	s := world(nil)
	s.Candidates = cands
	s.NodeCounts = map[string]int{"default": len(cands)}
	s.Cluster.NodePools = []*scheduling.NodePool{pool}
	s.Cluster.InstanceTypes = map[string][]*cloudprovider.InstanceType{"default": types}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	for _, c := range cands {
		it := byName[c.InstanceType]
		n := test.SchedNode(c.Node, it.Capacity.Cpu().String(), it.Capacity.Memory().String()).Zone(c.Zone).
			Label(corev1.LabelInstanceTypeStable, c.InstanceType).Label(karpv1.CapacityTypeLabelKey, c.CapacityType).
			Label(karpv1.NodePoolLabelKey, c.NodePool).Pods(c.Pods...).Obj()
		n.NodePool = c.NodePool
		s.Cluster.Nodes = append(s.Cluster.Nodes, n)
	}
	return s
}

// replacementOf is a command's single replacement in one line: capacity types and instance types it may launch.
func replacementOf(r *disruption.Result) string {
	if r.Command == nil || len(r.Command.Replacements) != 1 {
		return ""
	}
	rep := r.Command.Replacements[0]
	var cts, names []string
	for _, o := range rep.InstanceTypeOptions {
		if !contains(cts, o.CapacityType) {
			cts = append(cts, o.CapacityType)
		}
		names = append(names, o.Name)
	}
	var reqCT, reqTypes string
	for _, q := range rep.Requirements {
		switch q.Key {
		case karpv1.CapacityTypeLabelKey:
			reqCT = string(q.Operator) + strings.Join(q.Values, ",")
		case corev1.LabelInstanceTypeStable:
			reqTypes = string(q.Operator) + strings.Join(q.Values, ",")
		}
	}
	return fmt.Sprintf("options %s %s; requirements capacity-type %s, instance-type %s", strings.Join(cts, ","), strings.Join(names, ","), reqCT, reqTypes)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func typeNames(from, to int) string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("t%02d", i))
	}
	return strings.Join(out, ",")
}

// TestSpotToSpotConsolidation checks Karpenter's spot-to-spot rules with the SpotToSpotConsolidation gate off
// and on: a spot node is never replaced while the gate is off (only deleted), a single spot node needs 15 cheaper
// spot types and launches from the 15 cheapest (more with minValues), and a spot node is not replaced by
// on-demand when spot is allowed.
func TestSpotToSpotConsolidation(t *testing.T) {
	pool := func() *scheduling.NodePool { return test.SchedNodePool("default").Obj() }
	type want struct {
		command, replacement string
		stay                 disruption.StayReason
		message              string
	}
	cases := []struct {
		name       string
		snap       func() *disruption.Snapshot
		spotToSpot bool
		want       want
	}{
		{
			name: "gate off: a spot node with 20 cheaper spot types stays",
			snap: func() *disruption.Snapshot {
				return wideWorld(wideCatalog(25, 25), pool(), test.Candidate("a", "t24", 0.29).Spot().Pods(pod("web", "1500m")).Obj())
			},
			want: want{stay: disruption.StaySpotToSpot, message: "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"},
		},
		{
			name: "gate off: a spot node is not replaced by a cheaper on-demand node either",
			snap: func() *disruption.Snapshot {
				// t24's spot price is above every other type's on-demand price here.
				return wideWorld(wideCatalog(25, 25), pool(), test.Candidate("a", "t24", 0.50).Spot().Pods(pod("web", "1500m")).Obj())
			},
			want: want{stay: disruption.StaySpotToSpot, message: "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"},
		},
		{
			name: "gate off: an empty-enough spot node is still deleted",
			snap: func() *disruption.Snapshot {
				s := wideWorld(wideCatalog(25, 25), pool(), test.Candidate("a", "t24", 0.29).Spot().Pods(pod("web", "1")).Obj(),
					test.Candidate("b", "t00", 0.05).Spot().Pods(pod("api", "1")).Obj())
				return s
			},
			want: want{command: "underutilized/delete (single): 1 node(s) a, saving $0.2900/h"},
		},
		{
			name: "gate off: a spot node in a NodePool that allows only on-demand is replaced by cheaper on-demand",
			snap: func() *disruption.Snapshot {
				return wideWorld(wideCatalog(25, 25), test.SchedNodePool("default").
					Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj(),
					test.Candidate("a", "t24", 0.30).Spot().Pods(pod("web", "1500m")).Obj())
			},
			want: want{command: "underutilized/replace (single): 1 node(s) a, replaced by t00, saving $0.1000/h",
				replacement: "options on-demand " + typeNames(0, 10) + "; requirements capacity-type Inon-demand, instance-type In" + typeNames(0, 10)},
		},
		{
			name: "gate on: fewer than 15 cheaper spot types: the node stays",
			snap: func() *disruption.Snapshot {
				// t10's spot price ($0.15) is above ten other types' spot prices.
				return wideWorld(wideCatalog(25, 25), pool(), test.Candidate("a", "t10", 0.15).Spot().Pods(pod("web", "1500m")).Obj())
			},
			spotToSpot: true,
			want: want{stay: disruption.StaySpotToSpot,
				message: "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 10"},
		},
		{
			name: "gate on: 20 cheaper spot types: replaced, launching from the 15 cheapest, spot only",
			snap: func() *disruption.Snapshot {
				return wideWorld(wideCatalog(25, 25), pool(), test.Candidate("a", "t20", 0.25).Spot().Pods(pod("web", "1500m")).Obj())
			},
			spotToSpot: true,
			want: want{command: "underutilized/replace (single): 1 node(s) a, replaced by t00, saving $0.2000/h",
				replacement: "options spot " + typeNames(0, 15) + "; requirements capacity-type Inspot, instance-type In" + typeNames(0, 15)},
		},
		{
			name: "gate on: exactly 15 cheaper spot types are enough",
			snap: func() *disruption.Snapshot {
				return wideWorld(wideCatalog(25, 25), pool(), test.Candidate("a", "t15", 0.20).Spot().Pods(pod("web", "1500m")).Obj())
			},
			spotToSpot: true,
			want: want{command: "underutilized/replace (single): 1 node(s) a, replaced by t00, saving $0.1500/h",
				replacement: "options spot " + typeNames(0, 15) + "; requirements capacity-type Inspot, instance-type In" + typeNames(0, 15)},
		},
		{
			name: "gate on: minValues needing more than 15 types widens the launch",
			snap: func() *disruption.Snapshot {
				// 20 families over 25 types: minValues 18 on the family needs the 18 cheapest types.
				np := test.SchedNodePool("default").Requirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpExists).MinValues(18).Obj()
				return wideWorld(wideCatalog(25, 20), np, test.Candidate("a", "t24", 0.29).Spot().Pods(pod("web", "1500m")).Obj())
			},
			spotToSpot: true,
			want: want{command: "underutilized/replace (single): 1 node(s) a, replaced by t00, saving $0.2400/h",
				replacement: "options spot " + typeNames(0, 18) + "; requirements capacity-type Inspot, instance-type In" + typeNames(0, 18)},
		},
		{
			name: "gate on: two spot nodes replaced by one: no 15-type rule, every spot type cheaper than theirs (t03 at $0.08)",
			snap: func() *disruption.Snapshot {
				return wideWorld(wideCatalog(25, 25), pool(),
					test.Candidate("a", "t03", 0.08).Spot().Pods(pod("web", "1500m")).Obj(),
					test.Candidate("b", "t03", 0.08).Spot().Pods(pod("api", "1500m")).Obj())
			},
			spotToSpot: true,
			want: want{command: "underutilized/replace (multi): 2 node(s) a, b, replaced by t00, saving $0.1100/h",
				replacement: "options spot " + typeNames(0, 3) + "; requirements capacity-type Inspot, instance-type In" + typeNames(0, 3)},
		},
		{
			name: "gate off: a spot and an on-demand node are replaced by spot, not on-demand, cheaper than the spot t03",
			snap: func() *disruption.Snapshot {
				return wideWorld(wideCatalog(25, 25), pool(),
					test.Candidate("a", "t03", 0.08).Spot().Pods(pod("web", "1500m")).Obj(),
					test.Candidate("b", "t03", 0.23).Pods(pod("api", "1500m")).Obj())
			},
			want: want{command: "underutilized/replace (multi): 2 node(s) a, b, replaced by t00, saving $0.2600/h",
				replacement: "options spot " + typeNames(0, 3) + "; requirements capacity-type Inspot, instance-type In" + typeNames(0, 3)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := disruption.Decide(context.Background(), tc.snap(), disruption.Options{SpotToSpotConsolidation: tc.spotToSpot})
			if err != nil {
				t.Fatal(err)
			}
			got := want{replacement: replacementOf(r)}
			if r.Command != nil {
				got.command = r.Command.Message()
			}
			for _, s := range r.Stays {
				if s.NodeClaim == "a" {
					got.stay, got.message = s.Reason, s.Message
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
