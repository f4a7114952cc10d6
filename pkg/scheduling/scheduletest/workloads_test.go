package scheduletest_test

import (
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
)

func TestRandomSnapshotIsSeeded(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		a := scheduletest.RandomSnapshot(rand.New(rand.NewSource(seed)))
		b := scheduletest.RandomSnapshot(rand.New(rand.NewSource(seed)))
		if d := cmp.Diff(a, b); d != "" {
			t.Fatalf("seed %d: snapshots differ (-first +second):\n%s", seed, d)
		}
		if len(a.Pods) == 0 || len(a.NodePools) == 0 {
			t.Fatalf("seed %d: %d pods, %d NodePools; want some of each", seed, len(a.Pods), len(a.NodePools))
		}
	}
}

func TestBenchmarkSnapshot(t *testing.T) {
	snap := scheduletest.BenchmarkSnapshot(1000)
	if got := len(snap.Pods); got != 1000 {
		t.Errorf("pods = %d, want 1000", got)
	}
	if got := len(snap.InstanceTypes["default"]); got != 300 {
		t.Errorf("instance types = %d, want 300", got)
	}
}
