package explain

import (
	"strings"
	"testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
)

// TestOutcomeNamesWholeClusterPlan: a node in a whole-cluster command is shown with the plan its command belongs to.
func TestOutcomeNamesWholeClusterPlan(t *testing.T) {
	cmd := &disruption.Command{Reason: karpv1.DisruptionReasonUnderutilized, ConsolidationType: disruption.ConsolidationWhole,
		Decision: disruption.DecisionDelete, Candidates: []*disruption.Candidate{{NodeClaim: "a", Node: "a"}}, Savings: 0.4,
		Plan: "plan-101500-1a2b3c4d"}
	d, err := outcomeOf(&disruption.Result{Commands: []*disruption.Command{cmd}, Command: cmd}, "a")
	if err != nil {
		t.Fatal(err)
	}
	if d.Command == nil || d.Command.Plan != cmd.Plan || !strings.Contains(d.Message, "whole-cluster plan plan-101500-1a2b3c4d") {
		t.Errorf("decision %+v", d)
	}
}
