package scheduling_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestBoundCountsAntiAffinityNodes(t *testing.T) {
	// four small pods that refuse to share a node: the resource cover alone would be a fraction of one node; the
	// bound must charge four of the cheapest nodes, which is what the plan pays
	tests := []struct {
		name  string
		terms int
	}{
		{name: "one term", terms: 1},
		// the same term twice is one group: each pod still takes one node (the bound charged two)
		{name: "a term repeated", terms: 2},
	}
	for _, tc := range tests {
		for _, bound := range []string{scheduling.BoundCovering, scheduling.BoundPattern} {
			t.Run(tc.name+"/"+bound, func(t *testing.T) {
				plan := run(t, tcase{opts: scheduling.Options{Bound: bound}, pods: pods(4, func(i int) *test.SchedPodBuilder {
					b := test.SchedPod(fmt.Sprintf("p%d", i)).Requests("100m", "100Mi").Labels("app", "x")
					for range tc.terms {
						b = b.PodAntiAffinity(corev1.LabelHostname, "app", "x")
					}
					return b
				})})
				if d := cmp.Diff([]float64{0.32, 0.32, 1}, []float64{round(plan.Cost), round(plan.LowerBound + 1e-6), round(plan.Ratio)}); d != "" {
					t.Errorf("cost, bound, ratio (-want +got):\n%s", d)
				}
			})
		}
	}
}

func TestBoundPodsOnlyLargeTypesHold(t *testing.T) {
	// pods of 3 cpu fit only m.xlarge (0.20) and l.2xlarge (0.40): the bound prices them at those types, not at
	// arm.large's lower price per cpu
	plan := run(t, tcase{pods: pods(2, func(i int) *test.SchedPodBuilder {
		return test.SchedPod(fmt.Sprintf("p%d", i)).Requests("3", "1Gi")
	})})
	if plan.LowerBound < 0.29 || plan.Ratio < 1 {
		t.Errorf("bound %v (ratio %v): want at least 6 cpu at m.xlarge's 0.05 per cpu and a ratio >= 1", plan.LowerBound, plan.Ratio)
	}
}

// round keeps four decimals, so prices compare without float noise.
func round(x float64) float64 { return float64(int64(x*10000)) / 10000 }

// TestClassWorthSumsToBound: the dual prices repack ranks nodes by add up, over the pods on new nodes, to the
// bound's linear program.
func TestClassWorthSumsToBound(t *testing.T) {
	for _, n := range []int{100, 1000} {
		lp, worth, err := scheduling.BoundAndWorth(scheduletest.BenchmarkSnapshot(n))
		if err != nil {
			t.Fatal(err)
		}
		if lp <= 0 || math.Abs(lp-worth) > 1e-6*lp {
			t.Errorf("%d pods: bound program %.6f, pods worth %.6f: want equal and positive", n, lp, worth)
		}
	}
}
