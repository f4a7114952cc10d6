package scheduling_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption/disruptiontest"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
	"github.com/dovetail/dovetail/pkg/test"
)

// BenchmarkScheduling solves the mixed workload at several sizes and reports pods/s, nodes, cost and peak RSS of the
// solve as the provisioning controller runs it (no lower bound), then solves once more with the pattern bound and
// reports the ratio to it and the bound's own time. Every plan is validated by the oracle (set
// DOVETAIL_BENCH_ORACLE=0 to skip).
func BenchmarkScheduling(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000, 50000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			snap := scheduletest.BenchmarkSnapshot(n)
			b.ReportAllocs()
			b.ResetTimer()
			var plan *scheduling.Plan
			cpuStart := cpuSeconds()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				var err error
				plan, err = scheduling.Solve(context.Background(), snap, scheduling.Options{Bound: scheduling.BoundNone})
				if err != nil {
					b.Fatal(err)
				}
			}
			elapsed := time.Since(start) / time.Duration(b.N)
			cpu := (cpuSeconds() - cpuStart) / float64(b.N)
			b.StopTimer()
			rss := peakRSSMiB()
			cpuStart = cpuSeconds()
			bounded, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
			if err != nil {
				b.Fatal(err)
			}
			boundCPU := cpuSeconds() - cpuStart - cpu
			if bounded.Cost != plan.Cost {
				b.Fatalf("the bound changed the plan: $%.4f/h with it, $%.4f/h without", bounded.Cost, plan.Cost)
			}
			b.ReportMetric(cpu, "cpu-s/op")
			b.ReportMetric(float64(n)/elapsed.Seconds(), "pods/s")
			b.ReportMetric(float64(len(plan.NodeClaims)), "nodes")
			b.ReportMetric(plan.Cost, "$/h")
			b.ReportMetric(bounded.Ratio, "lp-ratio")
			b.ReportMetric(bounded.LowerBound, "bound-$/h")
			b.ReportMetric(max(boundCPU, 0), "bound-cpu-s")
			b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
			b.ReportMetric(rss, "peak-MiB")
			if os.Getenv("DOVETAIL_BENCH_ORACLE") != "0" {
				if v := oracle.Check(snap, plan); len(v) > 0 {
					b.Fatalf("%d oracle violations, first: %s", len(v), v[0])
				}
				b.ReportMetric(0, "violations")
			}
			if len(plan.Unschedulable) > 0 {
				b.Logf("first unschedulable: %s: %s", plan.Unschedulable[0].Pod, plan.Unschedulable[0].Reason)
			}
		})
	}
}

// cpuSeconds returns the process's user+system CPU time; on a shared machine it is a steadier measure than wall
// time (it includes the garbage collector's background work).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
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

// BenchmarkSchedulingIntoCluster solves bench-scale's provisioning phase: 2,000 pending pods of the mix of
// Karpenter's performance suite (hostname-spread, large and do-not-disrupt pods, 500 : 500 : 100) for a NodePool of
// their own, in bench-scale's base cluster of 5,000 full m5.xlarge nodes running 50,000 pods
// (disruptiontest.Packed). DOVETAIL_BENCH_NODES changes the existing nodes.
func BenchmarkSchedulingIntoCluster(b *testing.B) {
	nodes := test.BenchCount(b, "DOVETAIL_BENCH_NODES", 5000)
	base, err := disruptiontest.Packed(context.Background(), nodes)
	if err != nil {
		b.Fatal(err)
	}
	const total = 2000
	dnd := total / 11
	spread := (total - dnd) / 2
	var pods []*corev1.Pod
	for i := range total {
		var p *test.SchedPodBuilder
		switch {
		case i < spread:
			p = test.SchedPod(fmt.Sprintf("spread-%04d", i)).Labels("app", "spread").Requests("900m", "3174Mi").HostnameSpread(1, "app", "spread")
		case i < spread+dnd:
			p = test.SchedPod(fmt.Sprintf("dnd-%04d", i)).Labels("app", "dnd").Requests("900m", "3174Mi")
		default:
			p = test.SchedPod(fmt.Sprintf("big-%04d", i)).Labels("app", "big").Requests("3500m", "28Gi")
		}
		pods = append(pods, p.NodeSelector("karpenter.sh/nodepool", "grow").Obj())
	}
	grow := test.SchedNodePool("grow").
		Requirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "spot", "on-demand").
		Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux").Obj()
	snap := &scheduling.Snapshot{
		Pods:      pods,
		Nodes:     base.Cluster.Nodes,
		NodePools: append(slices.Clone(base.Cluster.NodePools), grow),
		InstanceTypes: map[string][]*cloudprovider.InstanceType{
			disruptiontest.PoolName: base.Cluster.InstanceTypes[disruptiontest.PoolName], "grow": test.BenchmarkInstanceTypes()},
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart := cpuSeconds()
	var plan *scheduling.Plan
	for b.Loop() {
		plan, err = scheduling.Solve(context.Background(), snap, scheduling.Options{Bound: scheduling.BoundNone})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpuStart)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(plan.NodeClaims)), "nodes")
	b.ReportMetric(float64(len(plan.Placements)), "on-existing")
	b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
}

// BenchmarkDrainCheckSolve is the solve a drain check makes, hundreds a pass in a drift at 5,000 nodes: the 10
// pods of one node of bench-scale's base cluster (disruptiontest.Packed) onto the other nodes only, no NodePools,
// with a memo warmed by the solve before (as the pass's checks share one). Its cost is mostly preparing the
// existing nodes. DOVETAIL_BENCH_NODES changes the node count.
func BenchmarkDrainCheckSolve(b *testing.B) {
	nodes := test.BenchCount(b, "DOVETAIL_BENCH_NODES", 5000)
	base, err := disruptiontest.Packed(context.Background(), nodes)
	if err != nil {
		b.Fatal(err)
	}
	drained := base.Cluster.Nodes[0]
	cp := *drained
	cp.MarkedForDeletion = true
	var pods []*corev1.Pod
	for _, p := range drained.Pods {
		pods = append(pods, scheduling.Rescheduled(p))
	}
	snap := &scheduling.Snapshot{Pods: pods, Nodes: append([]*scheduling.StateNode{&cp}, base.Cluster.Nodes[1:]...)}
	opts := scheduling.Options{Bound: scheduling.BoundNone, Memo: scheduling.NewMemo()}
	if _, err := scheduling.Solve(context.Background(), snap, opts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart := cpuSeconds()
	for b.Loop() {
		if _, err := scheduling.Solve(context.Background(), snap, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpuStart)/float64(b.N), "cpu-s/op")
}
