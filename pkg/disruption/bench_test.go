package disruption_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/disruption/disruptiontest"
	"github.com/dovetail/dovetail/pkg/test"
)

// Scaled-in benchmark cluster: 20,000 pods of the scheduling benchmark mix on 2,000 nodes, then 60% removed.
const (
	benchPods   = 20000
	benchRemove = 0.6
	benchSeed   = 7
)

// BenchmarkDecide measures one full decision pass on the scaled-in cluster: CPU time (process user+sys) and the
// peak RSS during the pass, printing the line hack/bench-disruption.sh reports.
//
// DOVETAIL_BENCH_PODS and DOVETAIL_BENCH_REMOVE change the cluster's pod count (about ten a node) and the fraction
// removed, e.g. 50000 and 0 for bench-scale's cluster of 5,000 nodes at rest.
func BenchmarkDecide(b *testing.B) {
	count, remove := test.BenchCount(b, "DOVETAIL_BENCH_PODS", benchPods), benchRemove
	if v := os.Getenv("DOVETAIL_BENCH_REMOVE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f >= 1 {
			b.Fatalf("DOVETAIL_BENCH_REMOVE=%q: want a fraction in [0, 1)", v)
		}
		remove = f
	}
	snap, err := disruptiontest.ScaledIn(context.Background(), count, remove, benchSeed)
	if err != nil {
		b.Fatal(err)
	}
	benchDecide(b, "disruption", snap)
}

// BenchmarkDecideBasic measures one decision pass on the cluster of the "basic" workload of Karpenter's performance
// suite scaled in from 500 + 500 pods to 70 % at random, with budgets of 100 %: many more simulations per pass than
// BenchmarkDecide's 10 % budgets allow (the local stack's consolidation bench decides on such a cluster).
func BenchmarkDecideBasic(b *testing.B) {
	snap, err := disruptiontest.ScaledInBasic(context.Background(), 500, 0.3, benchSeed)
	if err != nil {
		b.Fatal(err)
	}
	benchDecide(b, "disruption-basic", snap)
}

// BenchmarkDecidePacked measures one decision pass on bench-scale's base cluster at rest (disruptiontest.Packed):
// 5,000 full m5.xlarge nodes and 50,000 pods, nothing to do (DOVETAIL_BENCH_NODES changes the node count).
func BenchmarkDecidePacked(b *testing.B) {
	nodes := test.BenchCount(b, "DOVETAIL_BENCH_NODES", 5000)
	snap, err := disruptiontest.Packed(context.Background(), nodes)
	if err != nil {
		b.Fatal(err)
	}
	benchDecide(b, "disruption-packed", snap)
}

func benchDecide(b *testing.B, name string, snap *disruption.Snapshot) {
	ctx := context.Background()
	pods := 0
	for _, c := range snap.Candidates {
		pods += len(c.Pods)
	}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	b.ResetTimer()
	start := cpuSeconds()
	var res *disruption.Result
	var err error
	for i := 0; i < b.N; i++ {
		res, err = disruption.Decide(ctx, snap, benchOptions())
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu := (cpuSeconds() - start) / float64(b.N)
	b.StopTimer()
	rss := peakRSSMiB()
	savings, evictions := disruptiontest.Efficiency(res)
	if wc := res.WholeCluster; wc != nil {
		fmt.Printf("# whole-cluster plan %s: %d candidates at %.2f $/h, target %.2f $/h, bound %.2f $/h, %d commands saving %.2f $/h, %d simulations\n",
			wc.ID, wc.Candidates, wc.CurrentCost, wc.TargetCost, wc.LowerBound, len(wc.Commands), wc.Savings, wc.Simulations)
	}
	for _, line := range disruptiontest.Describe(res) {
		fmt.Println("#", line)
	}
	fmt.Printf("%s: nodes=%d pods=%d decide_cpu_s=%.2f peak_rss_mib=%.0f savings_per_h=%.2f evictions=%d\n",
		name, len(snap.Candidates), pods, cpu, rss, savings, evictions)
}

// cpuSeconds returns the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS, so that the peak measured after is the
// decision pass's own (Linux; elsewhere the peak stays the process's).
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMiB returns the process's peak resident set size (VmHWM) in MiB, or 0 where /proc is unavailable.
func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f kB", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// BenchmarkConverge simulates the disruption controller's loop on the scaled-in cluster until it settles and prints
// the convergence line hack/bench-disruption.sh reports.
func BenchmarkConverge(b *testing.B) {
	ctx := context.Background()
	snap, err := disruptiontest.ScaledIn(ctx, benchPods, benchRemove, benchSeed)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var c *disruptiontest.Convergence
	for i := 0; i < b.N; i++ {
		tm := disruptiontest.DefaultTimings()
		tm.Log = func(s string) { fmt.Println("#", s) }
		// the searches' timeouts are wall-clock: a pass on this shared machine is cut at 15 s of multi- and 15 s
		// of single-node search (the candidates it did not get to go first next pass) so that the simulation
		// ends in tens of minutes, not hours
		opts := benchOptions()
		opts.MultiNodeTimeout, opts.SingleNodeTimeout = 15*time.Second, 15*time.Second
		c, err = disruptiontest.Converge(ctx, snap, opts, tm)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	fmt.Printf("# convergence: settled=%v after %.1f min, %d passes, %d commands, nodes %d -> %d, cost %.2f -> %.2f $/h, bound %.2f $/h, max pods waiting %d, decide wall %.1f s\n",
		c.Settled, c.Duration.Minutes(), c.Passes, c.Commands, c.StartNodes, c.FinalNodes, c.StartCost, c.FinalCost, c.LowerBound,
		c.MaxPending, c.DecideTime.Seconds())
	fmt.Printf("convergence: minutes_to_5pct=%.1f final_over_bound=%.3f evictions=%d\n",
		c.ToWithin5Pct.Minutes(), c.FinalCost/c.LowerBound, c.Evictions)
}

// benchOptions are the decision options of the benchmarks: the controller's, with the whole-cluster search and
// spot-to-spot consolidation (the scheduler places the mix on spot nodes: without the feature gate consolidation
// can only delete them, and replacing them costs more than the on-demand price they would need).
// DOVETAIL_BENCH_WHOLE_CLUSTER=0 and DOVETAIL_BENCH_SPOT_TO_SPOT=0 turn either off, for comparison.
func benchOptions() disruption.Options {
	return disruption.Options{WholeCluster: os.Getenv("DOVETAIL_BENCH_WHOLE_CLUSTER") != "0",
		SpotToSpotConsolidation: os.Getenv("DOVETAIL_BENCH_SPOT_TO_SPOT") != "0"}
}
