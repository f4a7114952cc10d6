//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// AWS and API faults during a scale-out. Each scenario runs shortened in `make test` (well under
// 90 s on an idle machine); DOVETAIL_E2E_FAULTS=full (`make test-faults`) runs the sizes the issue names.

// faultsFull reports whether the full-size fault scenarios were asked for.
func faultsFull() bool { return os.Getenv("DOVETAIL_E2E_FAULTS") == "full" }

// faultSize picks the shortened or the full-size figure.
func faultSize[T any](short, full T) T {
	if faultsFull() {
		return full
	}
	return short
}

// logMark is where the controller's log ended when a scenario started; errorsSince reads only what came after.
type logMark int64

func markLog(t *testing.T) logMark {
	t.Helper()
	fi, err := os.Stat(env.ControllerLogPath())
	if err != nil {
		t.Fatal(err)
	}
	return logMark(fi.Size())
}

// errorLinesSince returns the controller's error-level log lines written since the mark that contain any of the
// substrings (case-insensitive), and how many error-level lines there were in all.
func errorLinesSince(t *testing.T, m logMark, substrings ...string) (matching []string, errorLines int) {
	t.Helper()
	f, err := os.Open(env.ControllerLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(m), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"level":"error"`) && !strings.Contains(line, `"level":"dpanic"`) {
			continue
		}
		errorLines++
		lower := strings.ToLower(line)
		for _, s := range substrings {
			if strings.Contains(lower, strings.ToLower(s)) {
				if len(line) > 600 {
					line = line[:600] + "…"
				}
				matching = append(matching, line)
				break
			}
		}
	}
	return matching, errorLines
}

// controllerMetric sums the samples of a metric family on the controller's metrics endpoint.
func controllerMetric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", env.PortBase+88))
	if err != nil {
		t.Fatalf("reading controller metrics: %v", err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func simState(t *testing.T) framework.SimState {
	t.Helper()
	st, err := env.SimulatorState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func controllerPID(t *testing.T) int {
	t.Helper()
	pid, err := env.ControllerPID()
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := framework.ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestThrottledScaleOut: half of all EC2 calls are answered RequestLimitExceeded for a window while a scale-out
// runs. Once the fault clears, every pod runs. During the window the controller's EC2 call rate stays bounded
// (the SDK's backoff and the reconcilers' 10-20 s requeue after a throttled call, not a retry loop), its CPU stays
// low (no hot loop), throttled calls are counted in dovetail_cloudprovider_throttled_calls_total, and throttling
// never reaches the log as an error (controller-runtime's "Reconciler error" carries a stack trace).
func TestThrottledScaleOut(t *testing.T) {
	ctx := context.Background()
	// Not "throttled": the log check looks for that word.
	const pool = "ec2limit"
	pods := faultSize[int32](36, 300)
	window := faultSize(30*time.Second, 2*time.Minute)
	// 1 cpu pods on 4-vCPU types: three pods a node, so the scale-out launches pods/3 instances.
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge", "c5.xlarge", "m6i.xlarge"},
		CapacityTypes: []string{"on-demand"}, Budgets: []map[string]any{{"nodes": "0"}}})
	t.Cleanup(func() {
		if err := env.SimAdmin(context.Background(), http.MethodPost, "faults/throttle", map[string]any{"rate": 0}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	// The fault is for the scale-out of a running controller, not for its first look at the account (images,
	// subnets, the instance type list, prices): one node first, as a warm-up.
	waitPoolReady(t, pool)
	warmUp(t, pool)
	pid := controllerPID(t)
	mark := markLog(t)
	throttledBefore := controllerMetric(t, "dovetail_cloudprovider_throttled_calls_total")
	if err := env.SimAdmin(ctx, http.MethodPost, "faults/throttle", map[string]any{"rate": 0.5, "services": []string{"ec2"}}); err != nil {
		t.Fatal(err)
	}
	before, cpuBefore, start := simState(t), processCPU(t, pid), time.Now()
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, pods, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	// The window: sample the EC2 calls every 10 s to find the busiest stretch too.
	var peak float64
	last, lastAt := before, start
	for time.Since(start) < window {
		time.Sleep(min(10*time.Second, window-time.Since(start)))
		st := simState(t)
		if rate := float64(st.ServiceCalls["ec2"]-last.ServiceCalls["ec2"]) / time.Since(lastAt).Minutes(); rate > peak {
			peak = rate
		}
		last, lastAt = st, time.Now()
	}
	if err := env.SimAdmin(ctx, http.MethodPost, "faults/throttle", map[string]any{"rate": 0}); err != nil {
		t.Fatal(err)
	}
	during, cpuDuring, elapsed := simState(t), processCPU(t, pid), time.Since(start)
	p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels{"app": "app"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fault cleared after %.0fs: %s", elapsed.Seconds(), p)

	waitRunning(t, pool, map[string]string{"app": "app"}, int(pods), faultSize(3*time.Minute, 6*time.Minute))
	after := simState(t)
	ec2Calls := during.ServiceCalls["ec2"] - before.ServiceCalls["ec2"]
	perMinute := float64(ec2Calls) / elapsed.Minutes()
	cpuShare := float64(cpuDuring-cpuBefore) / float64(elapsed)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	throttled := controllerMetric(t, "dovetail_cloudprovider_throttled_calls_total") - throttledBefore
	var byAction []string
	for a, n := range during.Calls {
		if d := n - before.Calls[a]; d > 0 {
			byAction = append(byAction, fmt.Sprintf("%s=%d", a, d))
		}
	}
	sort.Strings(byAction)
	t.Logf("throttle window %.0fs: %d EC2 calls (%.0f/min, busiest 10 s at %.0f/min; %s), %d throttled calls counted, controller CPU %.2fs (%.0f%% of one core); "+
		"all %d pods Running on %d nodeclaims %.0fs after apply; %d CreateFleet calls in all",
		elapsed.Seconds(), ec2Calls, perMinute, peak, strings.Join(byAction, " "), int(throttled), (cpuDuring - cpuBefore).Seconds(),
		100*cpuShare, pods, len(claims), time.Since(start).Seconds(), after.Calls["CreateFleet"]-before.Calls["CreateFleet"])

	// A bounded rate: a launch attempt takes a handful of EC2 calls (DescribeInstances to find an earlier launch,
	// CreateFleet, tags); a throttled call is retried by the SDK (at most 3 attempts, with backoff) and the launch
	// again after 10-20 s. So the rate grows with the NodeClaims in flight, about 37 a minute each in the shortened
	// run (442/min for 12). A retry loop without backoff gets its answer within milliseconds and would make
	// thousands a minute for each.
	if limit := 120 + 60*float64(len(claims)); perMinute > limit {
		t.Errorf("%.0f EC2 calls a minute under throttling for %d nodeclaims, want at most %.0f (a retry loop?)", perMinute, len(claims), limit)
	}
	if throttled < 1 {
		t.Errorf("no throttled call counted in dovetail_cloudprovider_throttled_calls_total although half of the EC2 calls were throttled")
	}
	// No hot loop: waiting out throttling costs no CPU. The scale-out itself (scheduling, launching) takes some;
	// a busy loop takes a whole core.
	if cpuShare > 0.5 {
		t.Errorf("controller used %.0f%% of a core during the throttle window, want at most 50%% (a hot loop?)", 100*cpuShare)
	}
	if pid2 := controllerPID(t); pid2 != pid {
		t.Errorf("controller restarted during the scenario (pid %d, now %d)", pid, pid2)
	}
	matching, errs := errorLinesSince(t, mark, "throttl", "RequestLimitExceeded", "Reconciler error")
	if len(matching) > 0 {
		t.Errorf("%d error-level log lines about throttling or reconciler errors (of %d error lines), want none:\n%s",
			len(matching), errs, strings.Join(matching, "\n"))
	}
}

// TestCapacityInTwoZones: every instance type the pods can use is out of capacity in two of the three zones.
// The pods run in the third; the controller remembers the refused offerings (its insufficient-capacity cache),
// so a second scale-out within the cache's 3 minutes does not offer them to EC2 again.
func TestCapacityInTwoZones(t *testing.T) {
	ctx := context.Background()
	const pool = "icezones"
	types := []string{"m5.large", "c5.large"}
	bad := []string{"us-west-2a", "us-west-2b"}
	const good = "us-west-2c"
	wave := faultSize[int32](4, 30)
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: types, CapacityTypes: []string{"on-demand"},
		Budgets: []map[string]any{{"nodes": "0"}}})
	t.Cleanup(func() {
		if err := env.SimAdmin(context.Background(), http.MethodPut, "faults", map[string]any{}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, typ := range types {
		for _, z := range bad {
			if err := env.SimAdmin(ctx, http.MethodPost, "faults/capacity", map[string]any{"instanceType": typ, "zone": z, "capacityType": "*"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	refused := func(st framework.SimState) (n int, by []string) {
		for _, typ := range types {
			for _, z := range bad {
				k := typ + "/" + z + "/on-demand"
				n += st.CapacityRefusals[k]
				by = append(by, fmt.Sprintf("%s=%d", k, st.CapacityRefusals[k]))
			}
		}
		return n, by
	}
	// One pod a node (1.5 cpu on 2-vCPU types), so each pod is a launch.
	before := simState(t)
	refusedBefore, _ := refused(before)
	mark := markLog(t)
	dep := framework.Deployment(pool, "app", pool, wave, "1500m", "1Gi")
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, int(wave), faultSize(2*time.Minute, 4*time.Minute))
	first := simState(t)
	refusedFirst, byPool := refused(first)
	t.Logf("first wave of %d pods: %d CreateFleet calls, refusals of the bad offerings: %s", wave,
		first.Calls["CreateFleet"]-before.Calls["CreateFleet"], strings.Join(byPool, " "))
	if refusedFirst == refusedBefore {
		t.Fatalf("no launch request named a refused offering: the scenario did not test the cache")
	}

	// Second wave, within the cache's lifetime: no request names a refused offering again.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = ptr.To(2 * wave)
	if err := env.Client.Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, int(2*wave), faultSize(2*time.Minute, 4*time.Minute))
	second := simState(t)
	refusedSecond, byPool := refused(second)
	t.Logf("second wave of %d pods: %d CreateFleet calls, refusals of the bad offerings: %s", wave,
		second.Calls["CreateFleet"]-first.Calls["CreateFleet"], strings.Join(byPool, " "))
	if refusedSecond != refusedFirst {
		t.Errorf("the second wave offered refused offerings to EC2 %d more times, want 0 (insufficient-capacity cache)", refusedSecond-refusedFirst)
	}

	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]int{}
	for _, n := range nodes {
		zones[n.Labels[corev1.LabelTopologyZone]]++
	}
	if len(zones) != 1 || zones[good] != len(nodes) {
		t.Errorf("nodes by zone %v, want all %d in %s", zones, len(nodes), good)
	}

	// explain sees the refused offerings as the controller does (published every few seconds in its ConfigMap).
	if len(nodes) > 0 {
		ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
		want := "m5.large " + bad[0] + " on-demand ("
		var out string
		if err := framework.Poll(ctx, 30*time.Second, 2*time.Second, func(context.Context) (bool, string, error) {
			out = runCtl(t, ctl, "explain", "node", nodes[0].Name)
			return strings.Contains(out, "holds") && strings.Contains(out, want), "explain node does not list the refused offerings yet", nil
		}); err != nil {
			t.Errorf("explain node never named %q as unavailable: %v\n%s", want, err, out)
		}
	}
	if matching, _ := errorLinesSince(t, mark, "Reconciler error"); len(matching) > 0 {
		t.Errorf("reconciler errors while zones were out of capacity:\n%s", strings.Join(matching, "\n"))
	}
}

// TestAPIServerRestart: the kube-apiserver stops for a while in the middle of a scale-out (etcd keeps running)
// and starts again. The controller rides it out in the same process, every pod runs, and nothing was launched
// twice: each NodeClaim has one instance and every instance of the pool belongs to a NodeClaim.
func TestAPIServerRestart(t *testing.T) {
	ctx := context.Background()
	const pool = "apirestart"
	pods := faultSize[int32](24, 150)
	outage := faultSize(20*time.Second, 30*time.Second)
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge", "c5.xlarge", "m6i.xlarge"},
		CapacityTypes: []string{"on-demand"}, Budgets: []map[string]any{{"nodes": "0"}}})
	waitPoolReady(t, pool)
	warmUp(t, pool)
	pid := controllerPID(t)
	warm, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, pods, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	// Stop the API server once the scale-out is under way: the first NodeClaims for the new pods exist, most not
	// launched yet.
	var claims []karpv1.NodeClaim
	err = framework.Poll(ctx, 2*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		var err error
		claims, err = env.NodeClaims(ctx, pool)
		return len(claims) > len(warm), fmt.Sprintf("%d nodeclaims", len(claims)), err
	})
	if err != nil {
		t.Fatal(err)
	}
	launched := 0
	for _, nc := range claims {
		if nc.Status.ProviderID != "" {
			launched++
		}
	}
	args, err := env.StopAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	t.Logf("kube-apiserver stopped %.1fs after apply, with %d nodeclaims (%d launched, %d of them from the warm-up)",
		stoppedAt.Sub(start).Seconds(), len(claims), launched, len(warm))
	// StartAPIServer must run even if the test fails from here on, or every later test loses its cluster.
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := env.StartAPIServer(context.Background(), args); err != nil {
				t.Errorf("cleanup: restarting kube-apiserver: %v", err)
			}
		}
	})
	time.Sleep(outage) // the outage itself: nothing to poll for
	if err := env.StartAPIServer(ctx, args); err != nil {
		t.Fatal(err)
	}
	restarted = true
	t.Logf("kube-apiserver back after %.1fs down", time.Since(stoppedAt).Seconds())

	// Progress every 10 s, to show how the stack recovers.
	next := time.Now()
	err = framework.Poll(ctx, faultSize(3*time.Minute, 6*time.Minute), time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels{"app": "app"})
		if err == nil && time.Now().After(next) {
			t.Logf("%.0fs after the restart: %s", time.Since(stoppedAt.Add(outage)).Seconds(), p)
			next = time.Now().Add(10 * time.Second)
		}
		return int32(p.PodsRunning) >= pods, p.String(), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Running pods after the restart: %v", pods, err)
	}
	t.Logf("all %d pods Running %.0fs after apply", pods, time.Since(start).Seconds())
	if pid2 := controllerPID(t); pid2 != pid {
		t.Errorf("controller restarted (pid %d, now %d); it must ride out an API server outage", pid, pid2)
	}
	if err := processAlive(pid); err != nil {
		t.Errorf("controller: %v", err)
	}

	// Nothing launched twice: once quiet, instances of the pool and NodeClaims match one to one.
	var report string
	err = framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		r, ok, err := matchInstances(ctx, pool)
		report = r
		return ok, r, err
	})
	if err != nil {
		t.Errorf("instances and nodeclaims of pool %s do not match: %v", pool, err)
	}
	t.Log(report)
	// And none was launched twice meanwhile, even if the spare was terminated since: the simulator remembers every
	// instance that carried a NodeClaim's tag.
	final, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	launches := simState(t).InstancesByNodeClaim
	var twice []string
	for _, nc := range final {
		if n := launches[nc.Name]; n != 1 {
			twice = append(twice, fmt.Sprintf("%s: %d instances carried its tag", nc.Name, n))
		}
	}
	if len(twice) > 0 {
		t.Errorf("nodeclaims not launched exactly once:\n%s\ncontroller log:\n%s", strings.Join(twice, "\n"),
			grepLog(t, "terminating instance without a nodeclaim", "deleting nodeclaim whose instance is gone", "adopt"))
	}
}

// grepLog returns the controller's log lines containing any of the substrings (cut to 300 characters each).
func grepLog(t *testing.T, substrings ...string) string {
	t.Helper()
	b, err := os.ReadFile(env.ControllerLogPath())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, s := range substrings {
			if strings.Contains(line, s) {
				if len(line) > 300 {
					line = line[:300] + "…"
				}
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func processAlive(pid int) error {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return fmt.Errorf("process %d is gone: %w", pid, err)
	}
	return nil
}

// matchInstances compares the pool's pending/running instances (by their karpenter.sh/nodeclaim tag) with its
// NodeClaims: every NodeClaim has exactly one instance, and every instance a NodeClaim.
func matchInstances(ctx context.Context, pool string) (string, bool, error) {
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		return "", false, err
	}
	instances, err := poolInstances(ctx, pool)
	if err != nil {
		return "", false, err
	}
	byClaim := map[string][]string{}
	for id, claim := range instances {
		byClaim[claim] = append(byClaim[claim], id)
	}
	var problems []string
	names := map[string]bool{}
	for _, nc := range claims {
		names[nc.Name] = true
		if ids := byClaim[nc.Name]; len(ids) > 1 {
			sort.Strings(ids)
			problems = append(problems, fmt.Sprintf("nodeclaim %s has %d instances %v (launched twice)", nc.Name, len(ids), ids))
		}
	}
	for claim, ids := range byClaim {
		if !names[claim] {
			problems = append(problems, fmt.Sprintf("instances %v belong to no nodeclaim (tag %s=%q)", ids, nodeClaimTag, claim))
		}
	}
	sort.Strings(problems)
	report := fmt.Sprintf("%d nodeclaims, %d running instances", len(claims), len(instances))
	if len(problems) > 0 {
		return report + ": " + strings.Join(problems, "; "), false, nil
	}
	return report + ", one to one", true, nil
}

// nodeClaimTag is the instance tag naming the NodeClaim an instance was launched for.
const nodeClaimTag = "karpenter.sh/nodeclaim"

// poolInstances maps the pending and running instances of the NodePool to the NodeClaim their tag names.
func poolInstances(ctx context.Context, pool string) (map[string]string, error) {
	out := map[string]string{}
	p := ec2.NewDescribeInstancesPaginator(env.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.sh/nodepool"), Values: []string{pool}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				claim := ""
				for _, tag := range inst.Tags {
					if aws.ToString(tag.Key) == nodeClaimTag {
						claim = aws.ToString(tag.Value)
					}
				}
				out[aws.ToString(inst.InstanceId)] = claim
			}
		}
	}
	return out, nil
}

// waitPoolReady waits until the NodePool (and so its EC2NodeClass) is Ready.
func waitPoolReady(t *testing.T, pool string) {
	t.Helper()
	err := framework.Poll(context.Background(), 2*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		np := &karpv1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return false, "", err
		}
		c := np.GetCondition(karpv1.ConditionTypeReady)
		if c == nil {
			return false, "no Ready condition", nil
		}
		return c.Status == "True", fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message), nil
	})
	if err != nil {
		t.Fatalf("nodepool %s not ready: %v", pool, err)
	}
}

// warmUp runs one pod on a node of the pool, so that the controller has looked at the account (instance types,
// prices, launch template) before a scenario's fault starts.
func warmUp(t *testing.T, pool string) {
	t.Helper()
	if err := env.Client.Create(context.Background(), framework.Deployment(pool, "warmup", pool, 1, "100m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "warmup"}, 1, 2*time.Minute)
}
