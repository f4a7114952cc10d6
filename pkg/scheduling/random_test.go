package scheduling_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
)

// randomCases is how many seeded random workloads TestRandomWorkloadsPassOracle solves; DOVETAIL_ORACLE_CASES
// overrides it.
const randomCases = 10000

// TestRandomWorkloadsPassOracle solves seeded random snapshots mixing every constraint family and checks every
// plan with the independent oracle: no placement the kube-scheduler would refuse, every pod accounted for.
func TestRandomWorkloadsPassOracle(t *testing.T) {
	cases := randomCases
	if v := os.Getenv("DOVETAIL_ORACLE_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("DOVETAIL_ORACLE_CASES: %v", err)
		}
		cases = n
	}
	if testing.Short() {
		cases = 500
	}
	placed, unplaced, failed := 0, 0, 0
	for seed := 0; seed < cases; seed++ {
		snap := scheduletest.RandomSnapshot(rand.New(rand.NewSource(int64(seed))))
		plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if v := oracle.Check(snap, plan); len(v) > 0 {
			failed++
			if failed <= 5 {
				t.Errorf("seed %d: %d violations, first: %s", seed, len(v), v[0])
			}
		}
		// the plan is one way to place its pods, so no lower bound may exceed its cost
		if plan.LowerBound > plan.Cost*(1+1e-9)+1e-12 {
			t.Errorf("seed %d: lower bound %.6f above the plan's cost %.6f", seed, plan.LowerBound, plan.Cost)
		}
		placed += len(snap.Pods) - len(plan.Unschedulable)
		unplaced += len(plan.Unschedulable)
	}
	t.Logf("%d cases, %d pods placed, %d unplaced with reasons, %d failing cases", cases, placed, unplaced, failed)
}

// TestRandomWorkloadsDeterministic solves a sample of random snapshots twice and expects identical plans.
func TestRandomWorkloadsDeterministic(t *testing.T) {
	for seed := 0; seed < 200; seed++ {
		a, err := scheduling.Solve(context.Background(), scheduletest.RandomSnapshot(rand.New(rand.NewSource(int64(seed)))), scheduling.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := scheduling.Solve(context.Background(), scheduletest.RandomSnapshot(rand.New(rand.NewSource(int64(seed)))), scheduling.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(a, b, cmpopts.IgnoreFields(scheduling.Plan{}, "Duration", "BoundDuration")); d != "" {
			t.Fatalf("seed %d: plans differ (-first +second):\n%s", seed, d)
		}
	}
}

var zonesAll = []string{"z1", "z2", "z3"}

// TestTopologyMemoKeepsPlans solves random snapshots and the benchmark mix with and without the topology answers
// kept per sig, and expects the same plans: the memo may only save work.
func TestTopologyMemoKeepsPlans(t *testing.T) {
	snaps := map[string]*scheduling.Snapshot{"benchmark mix": scheduletest.MixedSnapshot(6000, 3)}
	for seed := 0; seed < 300; seed++ {
		snaps[fmt.Sprintf("random seed %d", seed)] = scheduletest.RandomSnapshot(rand.New(rand.NewSource(int64(seed))))
	}
	for name, snap := range snaps {
		want, err := scheduling.SolveWithoutTopologyMemo(snap)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := scheduling.Solve(context.Background(), snap, scheduling.Options{Bound: scheduling.BoundNone})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, got, cmpopts.IgnoreFields(scheduling.Plan{}, "Duration", "BoundDuration")); d != "" {
			t.Errorf("%s: plans differ (-without memo +with):\n%s", name, d)
		}
	}
}
