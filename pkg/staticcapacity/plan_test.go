package staticcapacity

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func allowed(drifted, empty, underutilized int) map[karpv1.DisruptionReason]int {
	return map[karpv1.DisruptionReason]int{
		karpv1.DisruptionReasonDrifted: drifted, karpv1.DisruptionReasonEmpty: empty, karpv1.DisruptionReasonUnderutilized: underutilized,
	}
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up := func(name string, pods int, age time.Duration) Claim {
		return Claim{Name: name, Initialized: true, Pods: pods, CreatedAt: t0.Add(-age)}
	}
	drifted := func(c Claim) Claim { c.Drifted = true; return c }
	deleting := func(c Claim) Claim { c.Deleting = true; return c }
	launching := func(c Claim) Claim { c.Initialized = false; return c }
	limit := func(n int) *int { return &n }
	many := allowed(100, 100, 100)
	tests := []struct {
		name string
		in   Input
		want Plan
	}{
		{name: "scale up from nothing", in: Input{Replicas: 3, Allowed: many}, want: Plan{Create: 3}},
		{name: "deleting claims do not count", in: Input{Replicas: 2, Allowed: many,
			Claims: []Claim{up("a", 0, 1), deleting(up("b", 0, 1))}}, want: Plan{Create: 1}},
		{name: "limits.nodes caps a scale-up", in: Input{Replicas: 5, NodeLimit: limit(3), Allowed: many,
			Claims: []Claim{up("a", 0, 1)}}, want: Plan{Create: 2, Waiting: "limits.nodes (3) allows 2 of the 4 missing nodes"}},
		{name: "at replicas: nothing", in: Input{Replicas: 2, Allowed: allowed(0, 0, 0),
			Claims: []Claim{up("a", 0, 1), up("b", 0, 1)}}, want: Plan{}},
		{name: "scale down: empty, then fewest pods, youngest first", in: Input{Replicas: 2, Allowed: many,
			Claims: []Claim{up("a", 3, 1), up("b", 1, 2), up("c", 0, 3), up("d", 1, 1), up("e", 5, 1)}},
			want: Plan{Delete: []Deletion{{Name: "c"}, {Name: "d"}, {Name: "b"}}}},
		{name: "scale down within budget", in: Input{Replicas: 2, Allowed: allowed(100, 1, 100),
			Claims: []Claim{up("a", 0, 1), up("b", 0, 2), up("c", 0, 3), up("d", 0, 4)}},
			want: Plan{Delete: []Deletion{{Name: "a"}}, Waiting: "the disruption budgets allow no more deletions now"}},
		{name: "do-not-disrupt last", in: Input{Replicas: 1, Allowed: many,
			Claims: []Claim{{Name: "a", Initialized: true, DoNotDisrupt: true}, up("b", 4, 1)}},
			want: Plan{Delete: []Deletion{{Name: "b"}}}},
		{name: "drift: replacement first", in: Input{Replicas: 3, Allowed: many,
			Claims: []Claim{drifted(up("a", 1, 1)), drifted(up("b", 1, 1)), up("c", 1, 1)}},
			want: Plan{Create: 2, CreateForDrift: 2}},
		{name: "drift: Drifted budget caps replacements", in: Input{Replicas: 3, Allowed: allowed(1, 100, 100),
			Claims: []Claim{drifted(up("a", 1, 1)), drifted(up("b", 1, 1)), up("c", 1, 1)}},
			want: Plan{Create: 1, CreateForDrift: 1}},
		{name: "drift: limits.nodes leaves no room", in: Input{Replicas: 2, NodeLimit: limit(2), Allowed: many,
			Claims: []Claim{drifted(up("a", 1, 1)), up("b", 1, 1)}},
			want: Plan{Waiting: "limits.nodes (2) leaves no room to replace drifted nodes"}},
		{name: "drift: terminate-first when limits.nodes leaves no room", in: Input{Replicas: 2, NodeLimit: limit(2), Allowed: many, TerminateFirst: true,
			Claims: []Claim{drifted(up("a", 1, 1)), up("b", 1, 1)}},
			want: Plan{Delete: []Deletion{{Name: "a", Reason: karpv1.DisruptionReasonDrifted, TerminateFirst: true}}}},
		{name: "drift: terminate-first within the Drifted budget", in: Input{Replicas: 3, NodeLimit: limit(3), Allowed: allowed(1, 100, 100), TerminateFirst: true,
			Claims: []Claim{drifted(up("a", 1, 1)), drifted(up("b", 0, 1)), up("c", 1, 1)}},
			want: Plan{Delete: []Deletion{{Name: "b", Reason: karpv1.DisruptionReasonDrifted, TerminateFirst: true}}}},
		{name: "drift: terminate-first only for what the room lacks", in: Input{Replicas: 2, NodeLimit: limit(3), Allowed: many, TerminateFirst: true,
			Claims: []Claim{drifted(up("a", 1, 1)), drifted(up("b", 1, 2))}},
			want: Plan{Create: 1, CreateForDrift: 1, Delete: []Deletion{{Name: "a", Reason: karpv1.DisruptionReasonDrifted, TerminateFirst: true}}}},
		{name: "drift: after a terminate-first deletion the NodePool refills", in: Input{Replicas: 2, NodeLimit: limit(2), Allowed: allowed(0, 0, 0), TerminateFirst: true,
			Claims: []Claim{deleting(drifted(up("a", 1, 1))), up("b", 1, 1)}},
			want: Plan{Create: 1}},
		{name: "drift: no terminate-first with room to replace first", in: Input{Replicas: 2, NodeLimit: limit(3), Allowed: many, TerminateFirst: true,
			Claims: []Claim{drifted(up("a", 1, 1)), up("b", 1, 1)}},
			want: Plan{Create: 1, CreateForDrift: 1}},
		{name: "drift: waits for its replacement to initialize", in: Input{Replicas: 2, Allowed: many,
			Claims: []Claim{drifted(up("a", 1, 1)), up("b", 1, 1), launching(up("c", 0, 0))}},
			want: Plan{Waiting: "1 replacement nodes are still launching"}},
		{name: "drift: deletes the drifted node once its replacement is up", in: Input{Replicas: 2, Allowed: many,
			Claims: []Claim{drifted(up("a", 1, 1)), up("b", 1, 1), up("c", 0, 0)}},
			want: Plan{Delete: []Deletion{{Name: "a", Reason: karpv1.DisruptionReasonDrifted}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Decide(tt.in)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
