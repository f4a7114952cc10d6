package scheduling_test

import (
	"testing"

	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
)

func TestImprovePassLowersCostAndKeepsConstraints(t *testing.T) {
	for _, n := range []int{500, 3000} {
		snap := scheduletest.BenchmarkSnapshot(n)
		before, plan, err := scheduling.SolveWithoutImprove(snap)
		if err != nil {
			t.Fatal(err)
		}
		if v := oracle.Check(snap, plan); len(v) > 0 {
			t.Fatalf("%d pods: %d oracle violations, first: %s", n, len(v), v[0])
		}
		t.Logf("%d pods: %.4f before the improvement pass, %.4f after", n, before, plan.Cost)
		if plan.Cost >= before {
			t.Errorf("%d pods: cost %.4f after the improvement pass, %.4f before: want lower", n, plan.Cost, before)
		}
		if plan.Ratio < 1 {
			t.Errorf("%d pods: ratio %.4f below 1", n, plan.Ratio)
		}
	}
}
