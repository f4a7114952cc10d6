package disruption_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestFreshReplacementMargin: a node a disruption command launched less than FreshReplacementAge ago is
// consolidated only when the move saves at least FreshMarginShare of its price.
func TestFreshReplacementMargin(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// A large node priced 0.2 (a discounted offering) whose 3 cpu of pods fit a medium spot node at 0.12:
	// replacing it saves 0.08, 40% of its price.
	busy := func(b *test.CandidateBuilder) *disruption.Candidate {
		return b.Pods(pod("p1", "1500m"), pod("p2", "1500m")).Obj()
	}
	cases := []struct {
		name string
		cand *disruption.Candidate
		want summary
	}{{
		name: "an old node is replaced for 40% of its price",
		cand: busy(test.Candidate("a", "large", 0.2)),
		want: summary{Command: "underutilized/replace (single): 1 node(s) a, replaced by medium, saving $0.0800/h", Stays: map[string]disruption.StayReason{}},
	}, {
		name: "a fresh replacement is not replaced for 40% of its price",
		cand: busy(test.Candidate("a", "large", 0.2).Replacement(now.Add(-3 * time.Minute))),
		want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayFreshReplacement}},
	}, {
		name: "a replacement older than FreshReplacementAge is an ordinary node",
		cand: busy(test.Candidate("a", "large", 0.2).Replacement(now.Add(-disruption.FreshReplacementAge - time.Second))),
		want: summary{Command: "underutilized/replace (single): 1 node(s) a, replaced by medium, saving $0.0800/h", Stays: map[string]disruption.StayReason{}},
	}, {
		name: "a fresh replacement is replaced when the move saves at least half its price",
		cand: busy(test.Candidate("a", "large", 0.4).Replacement(now.Add(-time.Minute))),
		want: summary{Command: "underutilized/replace (single): 1 node(s) a, replaced by medium, saving $0.2800/h", Stays: map[string]disruption.StayReason{}},
	}, {
		name: "an empty fresh replacement is deleted: that saves its whole price",
		cand: test.Candidate("a", "large", 0.3).Replacement(now.Add(-time.Minute)).Obj(),
		want: summary{Command: "empty/delete (empty): 1 node(s) a, saving $0.3000/h", Stays: map[string]disruption.StayReason{}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := world(nil, tc.cand)
			snap.Now = now
			for _, whole := range []bool{false, true} {
				r, err := disruption.Decide(context.Background(), snap, disruption.Options{WholeCluster: whole})
				if err != nil {
					t.Fatal(err)
				}
				got := summarize(r)
				want := tc.want
				if whole && r.Command != nil && r.Command.ConsolidationType == disruption.ConsolidationWhole {
					got.Command = "" // the whole-cluster method words its command its own way; compare the verdict only
					want.Command = ""
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("whole-cluster %v: (-want +got)\n%s", whole, diff)
				}
			}
		})
	}
}
