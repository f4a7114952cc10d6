package explain

import (
	"strings"
	"testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
)

// TestOutcomeOfLaterCommand: a node in the second command of a pass is disrupted, with its Balanced verdict.
func TestOutcomeOfLaterCommand(t *testing.T) {
	first := &disruption.Command{Reason: karpv1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete,
		Candidates: []*disruption.Candidate{{NodeClaim: "a", Node: "a"}}}
	second := &disruption.Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: disruption.ConsolidationSingle,
		Decision: disruption.DecisionDelete, Candidates: []*disruption.Candidate{{NodeClaim: "b", Node: "b"}}, Savings: 0.2,
		Scores: []disruption.Score{{NodePool: "default", Value: 0.8, Threshold: 0.5, Approved: true}}}
	res := &disruption.Result{Commands: []*disruption.Command{first, second}, Command: first}
	d, err := outcomeOf(res, "b")
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeDisrupt || d.Command == nil || len(d.Command.Scores) != 1 || !strings.Contains(d.Message, "score 0.80 >= 0.50") {
		t.Errorf("decision %+v", d)
	}
}
