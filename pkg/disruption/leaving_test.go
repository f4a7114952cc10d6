package disruption_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"

	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestLeavingPodsTakeTheirRoom: a node being drained (MarkedForDeletion, not a candidate) holds a 3-cpu pod that
// is about to need room elsewhere. Without it, two half-used medium nodes are consolidated by moving one's pod
// onto the other. With its pod Leaving, the decision first expects it on one of them (which then stays this
// pass, StayReceiving) and plans around that room: the other node's pod no longer fits there, so nothing is
// planned into the room the drained pod will take.
func TestLeavingPodsTakeTheirRoom(t *testing.T) {
	scene := func(leaving bool) *disruption.Snapshot {
		s := world(nil, test.Candidate("a", "medium", 0.2).Pods(pod("web", "1")).Obj(),
			test.Candidate("b", "medium", 0.2).Pods(pod("api", "1")).Obj())
		leaver := pod("leaver", "3")
		held := test.SchedNode("held", "8", "32Gi").Zone("a").Pods(leaver).Obj()
		held.MarkedForDeletion = true
		s.Cluster.Nodes = append(s.Cluster.Nodes, held)
		if leaving {
			s.Leaving = append(s.Leaving, leaver)
		}
		return s
	}
	cases := []struct {
		name    string
		leaving bool
		want    summary
	}{
		{
			name: "without the drained node's pod, a's pod moves onto b",
			want: summary{Command: "underutilized/replace (multi): 2 node(s) a, b, replaced by small, saving $0.3400/h", Stays: map[string]disruption.StayReason{}},
		},
		{
			name:    "with it, its room is held first",
			leaving: true,
			want: summary{Command: "underutilized/replace (single): 1 node(s) b, replaced by small, saving $0.1400/h",
				Stays: map[string]disruption.StayReason{"a": disruption.StayReceiving}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := scene(tc.leaving)
			before := len(snap.Cluster.Nodes[2].Pods)
			res, err := disruption.Decide(context.Background(), snap, disruption.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(res)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if got := len(snap.Cluster.Nodes[2].Pods); got != before {
				t.Errorf("the snapshot's drained node has %d pods after the decision, had %d: the input was changed", got, before)
			}
		})
	}
}

// TestQueuedPodsTakeTheirRoom: a drifted node's pod would fit on the empty node "roomy", but a pod the
// kube-scheduler has yet to place (Queued) is about to take that room. The decision expects it there and replaces
// the drifted node rather than deleting it into that room (which the start check then refused, pass after pass,
// in a drift of 5,000 nodes); roomy is not made receiving. A queued pod that fits nowhere but on the drifted
// node itself is not put there, and changes nothing.
func TestQueuedPodsTakeTheirRoom(t *testing.T) {
	scene := func(queued ...*corev1.Pod) *disruption.Snapshot {
		s := world(nil, test.Candidate("old", "medium", 0.2).Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("web", "1")).Obj())
		roomy := test.SchedNode("roomy", "2", "8Gi").Zone(s.Candidates[0].Zone).Obj()
		s.Cluster.Nodes = append(s.Cluster.Nodes, roomy)
		s.Queued = queued
		return s
	}
	cases := []struct {
		name   string
		queued []*corev1.Pod
		want   string
	}{
		{name: "nothing queued: the pod moves to roomy", want: "drifted/delete"},
		{name: "a queued pod takes roomy's room: a replacement", queued: []*corev1.Pod{pod("queued", "1500m")}, want: "drifted/replace"},
		{name: "a queued pod only the drifted node could take is left out", queued: []*corev1.Pod{pod("huge", "3")}, want: "drifted/delete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := scene(tc.queued...)
			res, err := disruption.Decide(context.Background(), snap, disruption.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Command == nil || !strings.HasPrefix(res.Command.Message(), tc.want) {
				t.Fatalf("decision %v, want a %s command; stays %v", res.Command, tc.want, res.Stays)
			}
			for _, st := range res.Stays {
				if st.Reason == disruption.StayReceiving {
					t.Errorf("%s stays as receiving (%s): queued pods make no node receiving", st.NodeClaim, st.Message)
				}
			}
			if n := len(snap.Cluster.Nodes[1].Pods); n != 0 {
				t.Errorf("the snapshot's roomy node has %d pods after the decision: the input was changed", n)
			}
		})
	}
}
