package disruption_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

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
