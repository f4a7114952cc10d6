package disruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// atNodeLimit is a snapshot of one unhealthy node with pods in a NodePool whose limits.nodes (1) it uses up, so no
// replacement can be launched beside it.
func atNodeLimit(ready bool) *disruption.Snapshot {
	np := test.NodePool("default").Limit(scheduling.ResourceNodes, "1").Obj()
	if ready {
		np.SetCondition(karpv1.ConditionTypeReady, metav1.ConditionTrue, karpv1.ReasonReady, "")
	}
	s := world(np, unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0, 10*time.Minute))
	s.Cluster.NodePools[0] = test.SchedNodePool("default").Limit(scheduling.ResourceNodes, "1").Usage(scheduling.ResourceNodes, "1").Obj()
	return s
}

func TestDecideTerminateFirstRepair(t *testing.T) {
	cases := []struct {
		name     string
		snap     func() *disruption.Snapshot
		gate     bool
		commands []string
		stays    map[string]disruption.StayReason
	}{
		{"at its node limit, gate off: the node stays (no room to replace it first)", func() *disruption.Snapshot { return atNodeLimit(true) }, false,
			nil, map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
		{"at its node limit, TerminateFirstRepair: deleted first", func() *disruption.Snapshot { return atNodeLimit(true) }, true,
			[]string{"unhealthy/terminate-first: 1 node(s) a: KernelReady=False"}, map[string]disruption.StayReason{}},
		{"a NodePool not Ready could not refill: the node stays", func() *disruption.Snapshot { return atNodeLimit(false) }, true,
			nil, map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
		{"room for a replacement: replaced first, gate or not", func() *disruption.Snapshot {
			s := atNodeLimit(true)
			s.Cluster.NodePools[0] = test.SchedNodePool("default").Limit(scheduling.ResourceNodes, "2").Usage(scheduling.ResourceNodes, "1").Obj()
			return s
		}, true, []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"}, map[string]disruption.StayReason{}},
		{"pods that fit nowhere for another reason: the node stays", func() *disruption.Snapshot {
			s := atNodeLimit(true)
			s.Cluster.NodePools[0] = test.SchedNodePool("default").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj()
			return s
		}, true, nil, map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := disruption.Decide(context.Background(), tc.snap(), disruption.Options{TerminateFirstRepair: tc.gate})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Commands {
				got = append(got, c.Message())
				if c.Decision == disruption.DecisionTerminateFirst && len(c.Replacements) > 0 {
					t.Errorf("terminate-first command %q launches replacements", c.Message())
				}
				if c.Decision == disruption.DecisionTerminateFirst && c.TerminateFirstReason != disruption.TerminateFirstAtLimit {
					t.Errorf("terminate-first command %q: reason %q, want %q", c.Message(), c.TerminateFirstReason, disruption.TerminateFirstAtLimit)
				}
			}
			if d := cmp.Diff(tc.commands, got); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.stays, stayReasons(res)); d != "" {
				t.Errorf("stays (-want +got):\n%s", d)
			}
		})
	}
}

// inReservation is a snapshot of one node, unhealthy or drifted (mark), in the capacity reservation cr-1 of medium
// instances in zone a, whose offering is as given (room and availability), in a NodePool that allows the capacity
// types given.
func inReservation(mark func(*test.CandidateBuilder) *disruption.Candidate, room int, available bool, capacityTypes ...string) *disruption.Snapshot {
	np := test.NodePool("default").Obj()
	np.SetCondition(karpv1.ConditionTypeReady, metav1.ConditionTrue, karpv1.ReasonReady, "")
	s := world(np, mark(test.Candidate("a", "medium", 0.00000002).Reserved("cr-1").Pods(pod("web", "1500m")).NotConsolidatable()))
	types := s.Cluster.InstanceTypes["default"]
	for i, it := range types {
		if it.Name != "medium" {
			continue
		}
		cp := *it
		cp.Offerings = append(append([]cloudprovider.Offering(nil), it.Offerings...), cloudprovider.Offering{Zone: "a",
			CapacityType: karpv1.CapacityTypeReserved, Price: 0.00000002, Available: available, ReservationID: "cr-1",
			ReservationType: "default", ReservationCapacity: room})
		types[i] = &cp
	}
	s.Cluster.NodePools[0] = test.SchedNodePool("default").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...).Obj()
	return s
}

func TestDecideTerminateFirstReserved(t *testing.T) {
	sick := func(b *test.CandidateBuilder) *disruption.Candidate { return unhealthy(b.Obj(), 0, 10*time.Minute) }
	drifted := func(b *test.CandidateBuilder) *disruption.Candidate { return b.Drifted("NodeClassDrift").Obj() }
	reserved := []string{karpv1.CapacityTypeReserved}
	type command struct {
		Message, TerminateFirstReason string
		Replacements                  int
	}
	cases := []struct {
		name     string
		snap     func() *disruption.Snapshot
		repair   bool
		drift    bool
		commands []command
		stays    map[string]disruption.StayReason
	}{
		{name: "unhealthy, reservation full, TerminateFirstRepair: deleted first",
			snap: func() *disruption.Snapshot { return inReservation(sick, 0, false, reserved...) }, repair: true,
			commands: []command{{"unhealthy/terminate-first: 1 node(s) a: KernelReady=False", disruption.TerminateFirstNoReservedCapacity, 0}},
			stays:    map[string]disruption.StayReason{}},
		{name: "unhealthy, reservation full, gate off: the node stays",
			snap:  func() *disruption.Snapshot { return inReservation(sick, 0, false, reserved...) },
			stays: map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
		{name: "unhealthy, reservation full, only TerminateFirstDrift: the node stays",
			snap: func() *disruption.Snapshot { return inReservation(sick, 0, false, reserved...) }, drift: true,
			stays: map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
		{name: "drifted, reservation full, TerminateFirstDrift: deleted first",
			snap: func() *disruption.Snapshot { return inReservation(drifted, 0, false, reserved...) }, drift: true,
			commands: []command{{"drifted/terminate-first: 1 node(s) a", disruption.TerminateFirstNoReservedCapacity, 0}},
			stays:    map[string]disruption.StayReason{}},
		{name: "drifted, reservation full, only TerminateFirstRepair: the node stays",
			snap: func() *disruption.Snapshot { return inReservation(drifted, 0, false, reserved...) }, repair: true,
			stays: map[string]disruption.StayReason{"a": disruption.StayPodsDoNotFit}},
		{name: "drifted, reservation full, on-demand allowed: replaced first on on-demand",
			snap: func() *disruption.Snapshot {
				return inReservation(drifted, 0, false, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
			}, drift: true,
			commands: []command{{"drifted/replace: 1 node(s) a, replaced by small", "", 1}},
			stays:    map[string]disruption.StayReason{}},
		{name: "drifted, reservation with room: replaced first in it",
			snap: func() *disruption.Snapshot { return inReservation(drifted, 1, true, reserved...) }, drift: true,
			commands: []command{{"drifted/replace: 1 node(s) a, replaced by medium", "", 1}},
			stays:    map[string]disruption.StayReason{}},
		{name: "drifted, reservation unavailable for another reason than room: the node stays",
			snap: func() *disruption.Snapshot { return inReservation(drifted, 2, false, reserved...) }, drift: true,
			stays: map[string]disruption.StayReason{"a": disruption.StayPodsDoNotFit}},
		{name: "drifted, its pods need two nodes of the full reservation: the node stays",
			snap: func() *disruption.Snapshot {
				s := inReservation(drifted, 0, false, reserved...)
				c := s.Candidates[0]
				two := test.Candidate("a", "medium", 0.00000002).Reserved("cr-1").Pods(pod("web", "3"), pod("api", "3")).Obj()
				c.Pods = two.Pods
				s.Cluster.Nodes[0].Pods = two.Pods
				return s
			}, drift: true,
			stays: map[string]disruption.StayReason{"a": disruption.StayPodsDoNotFit}},
		{name: "drifted on-demand node in a NodePool of the full reservation: the node stays",
			snap: func() *disruption.Snapshot {
				s := inReservation(drifted, 0, false, reserved...)
				s.Candidates[0].CapacityType, s.Candidates[0].ReservationID = karpv1.CapacityTypeOnDemand, ""
				return s
			}, drift: true,
			stays: map[string]disruption.StayReason{"a": disruption.StayPodsDoNotFit}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.snap()
			before := fmt.Sprint(snap.Cluster.InstanceTypes["default"][1].Offerings)
			res, err := disruption.Decide(context.Background(), snap, disruption.Options{TerminateFirstRepair: tc.repair, TerminateFirstDrift: tc.drift})
			if err != nil {
				t.Fatal(err)
			}
			var got []command
			for _, c := range res.Commands {
				got = append(got, command{c.Message(), c.TerminateFirstReason, len(c.Replacements)})
			}
			if d := cmp.Diff(tc.commands, got); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.stays, stayReasons(res)); d != "" {
				t.Errorf("stays (-want +got):\n%s", d)
			}
			if after := fmt.Sprint(snap.Cluster.InstanceTypes["default"][1].Offerings); after != before {
				t.Errorf("the snapshot's offerings changed:\n%s\n%s", before, after)
			}
		})
	}
}
