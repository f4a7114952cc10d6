package disruption

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

func eventsState(now time.Time) *state {
	nc := func(name string) karpv1.NodeClaim {
		return karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: karpv1.NodeClaimStatus{NodeName: name + "-node"}}
	}
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	return &state{View: &View{
		Now:       now,
		Claims:    []karpv1.NodeClaim{nc("a"), nc("b")},
		Nodes:     map[string]*corev1.Node{"a-node": node("a-node"), "b-node": node("b-node")},
		NodePools: map[string]*karpv1.NodePool{"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}}},
	}}
}

func TestAnnounceStaysUnconsolidatable(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	rec := test.NewRecorder()
	c := NewController(deps.Deps{Recorder: rec})
	stays := []core.Stay{
		{NodeClaim: "a", Node: "a-node", Reason: core.StayNoCheaper, Message: "no cheaper replacement"},
		{NodeClaim: "b", Node: "b-node", Reason: core.StayDoNotDisrupt, Message: "pod web has do-not-disrupt"},
	}
	c.announceStays(eventsState(now), stays)
	want := []test.Event{
		{Kind: "Node", Name: "a-node", Type: corev1.EventTypeNormal, Reason: "Unconsolidatable", Message: "no cheaper replacement"},
		{Kind: "NodeClaim", Name: "a", Type: corev1.EventTypeNormal, Reason: "Unconsolidatable", Message: "no cheaper replacement"},
		{Kind: "Node", Name: "b-node", Type: corev1.EventTypeNormal, Reason: "DisruptionBlocked", Message: "Cannot disrupt: pod web has do-not-disrupt"},
		{Kind: "NodeClaim", Name: "b", Type: corev1.EventTypeNormal, Reason: "DisruptionBlocked", Message: "Cannot disrupt: pod web has do-not-disrupt"},
	}
	if diff := cmp.Diff(want, rec.Events()); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	rec.Reset()
	c.announceStays(eventsState(now.Add(time.Minute)), stays)
	if got := rec.Events(); len(got) != 0 {
		t.Fatalf("unchanged stays a minute later: events %v, want none", got)
	}
	c.announceStays(eventsState(now.Add(UnconsolidatableRepeat+time.Second)), stays)
	if got := rec.WithReason("Unconsolidatable"); len(got) != 2 {
		t.Fatalf("after %s: Unconsolidatable events %v, want them repeated on the Node and NodeClaim", UnconsolidatableRepeat, got)
	}
}

// TestAnnounceStaysPaced: a pass announces at most StayEventsPerPass stays, the ones never announced before the
// repeats, and the ones left out come in the next passes.
func TestAnnounceStaysPaced(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	n := 2*StayEventsPerPass + StayEventsPerPass/2
	state := func(at time.Time, claims int) *state {
		st := &state{View: &View{Now: at}}
		for i := range claims {
			st.Claims = append(st.Claims, karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nc-%04d", i)}})
		}
		return st
	}
	stays := func(claims int) []core.Stay {
		var out []core.Stay
		for i := range claims {
			out = append(out, core.Stay{NodeClaim: fmt.Sprintf("nc-%04d", i), Reason: core.StayNoCheaper, Message: "no cheaper replacement"})
		}
		return out
	}
	rec := test.NewRecorder()
	c := NewController(deps.Deps{Recorder: rec})
	// No Node in the state: one event (on the NodeClaim) a stay.
	announced := map[string]int{}
	for pass, want := range []int{StayEventsPerPass, StayEventsPerPass, StayEventsPerPass / 2, 0} {
		rec.Reset()
		c.announceStays(state(now.Add(time.Duration(pass)*time.Minute), n), stays(n))
		got := rec.WithReason("Unconsolidatable")
		if len(got) != want {
			t.Fatalf("pass %d: %d Unconsolidatable events, want %d", pass, len(got), want)
		}
		for _, e := range got {
			announced[e.Name]++
		}
	}
	if len(announced) != n {
		t.Fatalf("%d of %d stays announced after the passes", len(announced), n)
	}
	for name, times := range announced {
		if times != 1 {
			t.Fatalf("%s announced %d times within %s, want once", name, times, UnconsolidatableRepeat)
		}
	}
	// Every stay is due again, and one node is new: it comes first.
	rec.Reset()
	later := now.Add(UnconsolidatableRepeat + 10*time.Minute)
	c.announceStays(state(later, n+1), stays(n+1))
	got := rec.WithReason("Unconsolidatable")
	if len(got) != StayEventsPerPass {
		t.Fatalf("repeat pass: %d events, want %d", len(got), StayEventsPerPass)
	}
	if newest := fmt.Sprintf("nc-%04d", n); got[0].Name != newest {
		t.Fatalf("repeat pass: first event on %s, want the never-announced %s", got[0].Name, newest)
	}
}

func TestAnnounceConsolidation(t *testing.T) {
	st := eventsState(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	claims := []*karpv1.NodeClaim{&st.Claims[0], &st.Claims[1]}
	single := &core.Command{Reason: karpv1.DisruptionReasonUnderutilized, Decision: core.DecisionDelete, Savings: 0.5,
		Candidates: []*core.Candidate{{NodeClaim: "a", Node: "a-node", NodePool: "default"}},
		Scores:     []core.Score{{NodePool: "default", Value: 3, Threshold: 0.5, Approved: true, SavingsFraction: 0.3, DisruptionFraction: 0.1}}}
	multi := &core.Command{Reason: karpv1.DisruptionReasonUnderutilized, Decision: core.DecisionDelete, Savings: 1,
		Candidates: []*core.Candidate{{NodeClaim: "a", Node: "a-node", NodePool: "default"}, {NodeClaim: "b", Node: "b-node", NodePool: "default"}},
		Scores:     []core.Score{{NodePool: "default", Value: 3, Threshold: 0.5, Approved: true}}}
	drift := &core.Command{Reason: karpv1.DisruptionReasonDrifted, Decision: core.DecisionReplace,
		Candidates: []*core.Candidate{{NodeClaim: "a", Node: "a-node", NodePool: "default"}}}
	type placed struct{ Kind, Name, Reason string }
	tests := []struct {
		name   string
		cmd    *core.Command
		claims []*karpv1.NodeClaim
		want   []placed
	}{
		{name: "single node", cmd: single, claims: claims[:1], want: []placed{
			{"Node", "a-node", "ConsolidationCandidate"}, {"NodeClaim", "a", "ConsolidationCandidate"},
			{"Node", "a-node", "ConsolidationApproved"}, {"NodeClaim", "a", "ConsolidationApproved"}}},
		{name: "multi node approval goes on the nodepool", cmd: multi, claims: claims, want: []placed{
			{"Node", "a-node", "ConsolidationCandidate"}, {"NodeClaim", "a", "ConsolidationCandidate"},
			{"Node", "b-node", "ConsolidationCandidate"}, {"NodeClaim", "b", "ConsolidationCandidate"},
			{"NodePool", "default", "ConsolidationApproved"}}},
		{name: "drift is no consolidation", cmd: drift, claims: claims[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := test.NewRecorder()
			c := NewController(deps.Deps{Recorder: rec})
			c.announceConsolidation(st, tt.cmd, tt.claims)
			var got []placed
			for _, e := range rec.Events() {
				if e.Type != corev1.EventTypeNormal {
					t.Errorf("event %v: type %s, want Normal", e, e.Type)
				}
				got = append(got, placed{e.Kind, e.Name, e.Reason})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
	rec := test.NewRecorder()
	NewController(deps.Deps{Recorder: rec}).announceConsolidation(st, single, claims[:1])
	if got := rec.WithReason("ConsolidationCandidate")[0].Message; got != "Consolidation candidate: "+single.Message()+" (savings: $0.50)" {
		t.Errorf("ConsolidationCandidate message = %q", got)
	}
}

func TestAnnounceRejected(t *testing.T) {
	st := eventsState(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	rec := test.NewRecorder()
	c := NewController(deps.Deps{Recorder: rec})
	r := Record{Reason: karpv1.DisruptionReasonUnderutilized, Decision: core.DecisionDelete, Message: "delete a-node", Candidates: 1}
	c.announceRejected(st, r, []*karpv1.NodeClaim{&st.Claims[0]}, "pod web fits nowhere")
	want := []test.Event{
		{Kind: "Node", Name: "a-node", Type: corev1.EventTypeNormal, Reason: "ConsolidationRejected", Message: "Consolidation rejected: delete a-node, reason: pod web fits nowhere"},
		{Kind: "NodeClaim", Name: "a", Type: corev1.EventTypeNormal, Reason: "ConsolidationRejected", Message: "Consolidation rejected: delete a-node, reason: pod web fits nowhere"},
	}
	if diff := cmp.Diff(want, rec.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	rec.Reset()
	r.Reason = karpv1.DisruptionReasonDrifted
	c.announceRejected(st, r, []*karpv1.NodeClaim{&st.Claims[0]}, "pod web fits nowhere")
	if got := rec.Events(); len(got) != 0 {
		t.Errorf("drift abandoned: events %v, want none", got)
	}
}

func TestAnnounceBlockedPools(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	st := eventsState(now)
	frozen := test.NodePool("frozen").Budget("0", karpv1.DisruptionReasonDrifted).Obj()
	st.NodePools = map[string]*karpv1.NodePool{"frozen": frozen, "default": test.NodePool("default").Obj(),
		"empty": test.NodePool("empty").Budget("0").Obj()}
	rec := test.NewRecorder()
	c := NewController(deps.Deps{Recorder: rec})
	counts := map[string]int{"frozen": 3, "default": 3}
	c.announceBlockedPools(st, counts)
	got := rec.Events()
	if len(got) != 1 || got[0].Kind != "NodePool" || got[0].Name != "frozen" || got[0].Reason != "DisruptionBlocked" ||
		got[0].Type != corev1.EventTypeNormal {
		t.Fatalf("events %+v, want one DisruptionBlocked on nodepool frozen (for Drifted)", got)
	}
	st.Now = now.Add(30 * time.Second)
	c.announceBlockedPools(st, counts)
	if n := len(rec.Events()); n != 1 {
		t.Errorf("30s later: %d events, want no repeat", n)
	}
	st.Now = now.Add(BlockedPoolRepeat)
	c.announceBlockedPools(st, counts)
	if n := len(rec.Events()); n != 2 {
		t.Errorf("%s later: %d events, want it repeated", BlockedPoolRepeat, n)
	}
}
