//go:build bench

package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// Knobs of TestScale (make bench-scale), all optional:
//   - BENCH_SCALE_NODES (5000): nodes of the base cluster; it runs 10 pods a node.
//   - BENCH_SCALE_PHASES (rest,provision,consolidate,drift): the phases to run, in the order given; a phase may
//     come more than once (its figures are then keyed rest#2 and so on). restart, in no default, stops the
//     controller as a rolling update does and starts it again on the cluster (e.g. rest,restart,rest).
//   - BENCH_SCALE_REST (10m): how long the at-rest phase lasts.
//   - BENCH_SCALE_RESTART_SETTLE (3m): how long the restart phase measures the controller after it is ready.
//   - BENCH_SCALE_PROVISION_PODS (2000): pending pods of the provisioning phase.
//   - BENCH_SCALE_PROVISION_FOR (30m): how long the provisioning phase waits for its pods to run; it then reports
//     what it reached and fails.
//   - BENCH_SCALE_QUIET (3m): the consolidation phase ends once this long passed without a node draining.
//   - BENCH_SCALE_DRIFT_FOR (none): stop the drift phase after this long and report the part done (nodes replaced,
//     their rate); without it the phase runs until every node is replaced.
//   - BENCH_SCALE_OUT: a folder for the controller's CPU and heap profiles (taken at the end of the rest phase)
//     and series.csv, its CPU time and RSS every 10 s of the run (plot: go run ./hack/scaleplot).
const (
	scaleNamespace = "scale"     // the base cluster's pods
	scalePool      = "scale"     // its NodePool: m5.xlarge on-demand only, 10 pods a node
	growNamespace  = "scale-out" // the provisioning phase's pods
	growPool       = "scale-out" // their NodePool: the example's
	scaleApps      = 50          // ReplicaSets the base cluster's pods belong to
	podsPerNode    = 10
)

// scalePodCPU: 10 pods fill an m5.xlarge (3,920m allocatable) and an 11th does not fit, so the base cluster
// holds nothing to consolidate until pods go.
const scalePodCPU, scalePodMemory = "370m", "1Gi"

// TestScale: a cluster of N nodes and 10·N pods, then the controller measured phase by phase. The cluster is
// built without provisioning passes: N NodeClaims are created as the provisioner would write them (their
// instances launched by the controller in the simulator, a few CreateFleet calls a batch), then 10·N pods are
// created bound to the Nodes kwok runs, 10 a node, and adopted by the 50 ReplicaSets they belong to (placePods). Each phase prints one line `bench-scale
// phase=...` with its figures and the CPU of each process of the stack (cores over the phase), and names the
// process that limited it: the one that used the most CPU, or the machine when its 2 cores were busy.
func TestScale(t *testing.T) {
	nodes := benchCount(t, "BENCH_SCALE_NODES", 5000, 10)
	growPods := benchCount(t, "BENCH_SCALE_PROVISION_PODS", 2000, 11)
	rest := benchDuration(t, "BENCH_SCALE_REST", 10*time.Minute)
	provisionFor := benchDuration(t, "BENCH_SCALE_PROVISION_FOR", 30*time.Minute)
	restartSettle := benchDuration(t, "BENCH_SCALE_RESTART_SETTLE", 3*time.Minute)
	quiet := benchDuration(t, "BENCH_SCALE_QUIET", 3*time.Minute)
	var driftFor time.Duration
	if os.Getenv("BENCH_SCALE_DRIFT_FOR") != "" {
		driftFor = benchDuration(t, "BENCH_SCALE_DRIFT_FOR", 0)
	}
	phases, err := scalePhases(os.Getenv("BENCH_SCALE_PHASES"))
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("BENCH_SCALE_OUT")
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	t.Logf("bench-scale: %d nodes, %d pods, phases %v, machine %+v", nodes, nodes*podsPerNode, phases, describeMachine())
	var samples *series
	if out != "" {
		if samples, err = startSeries(controllerPID, filepath.Join(out, "series.csv")); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := samples.Stop(); err != nil {
				t.Errorf("series: %v", err)
			}
		}()
	}

	tracker := buildScaleCluster(t, nodes)
	t.Logf("bench-scale setup: %d nodes and %d pods Running %.0f s after start", nodes, nodes*podsPerNode, time.Since(start).Seconds())
	controllerWrites(t, "setup")
	figures := map[string]any{"nodes": nodes, "pods": nodes * podsPerNode}
	ran := map[string]int{}
	for _, p := range phases {
		ran[p]++
		key := p
		if ran[p] > 1 {
			key = fmt.Sprintf("%s#%d", p, ran[p])
		}
		if samples != nil {
			samples.setPhase(key)
		}
		var f map[string]any
		switch p {
		case "rest":
			f = restPhase(t, key, rest, out)
		case "restart":
			f = restartPhase(t, restartSettle)
		case "provision":
			f = provisionPhase(t, growPods, provisionFor)
		case "consolidate":
			f = consolidatePhase(t, tracker, nodes, quiet)
		case "drift":
			f = driftPhase(t, tracker, nodes, driftFor)
		}
		figures[key] = f
		controllerWrites(t, key)
	}
	report(t, result{Name: "scale", Figures: figures, Targets: map[string]any{
		"rest.controllerCores": "< 0.05", "rest.controllerRSSMiB": "< 600", "provision.meanPassSeconds": "< 2",
		"provision.secondsToAllRunning": "< 300", "consolidate.meanDecisionSeconds": "< 3", "drift.seconds": "< 3600 at 5,000 nodes",
	}})
}

func benchDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s must be a positive duration such as 10m, got %q", name, v)
	}
	return d
}

// scalePhases parses BENCH_SCALE_PHASES: a comma-separated list of phases, run in the order given (a phase may
// come more than once); empty, the four of the issue in their order.
func scalePhases(v string) ([]string, error) {
	all := []string{"rest", "provision", "consolidate", "drift"}
	if strings.TrimSpace(v) == "" {
		return all, nil
	}
	known := append([]string{"restart"}, all...)
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(known, p) {
			return nil, fmt.Errorf("BENCH_SCALE_PHASES: unknown phase %q (want a list of %s)", p, strings.Join(known, ","))
		}
		out = append(out, p)
	}
	return out, nil
}

// buildScaleCluster creates the base NodePool (no disruption allowed while the cluster is built), its N
// NodeClaims, and once they are initialized its 10·N pods (placePods); it returns a tracker of those pods
// once all run.
func buildScaleCluster(t *testing.T, nodes int) *podTracker {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{scaleNamespace, growNamespace} {
		if err := framework.EnsureNamespace(ctx, env.Client, ns); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := framework.NodePool(scalePool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "Never", Budgets: []map[string]any{{"nodes": "0"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "NodePool" {
			// No more than the N nodes while the cluster is built (see placePods); removed once it is.
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{"cpu": fmt.Sprint(4 * nodes)}, "spec", "limits"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: scalePool}, nc); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(nc.Status.Conditions, "Ready")
		return ready != nil && ready.Status == metav1.ConditionTrue, "EC2NodeClass not Ready", nil
	}); err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: scalePool}, np); err != nil {
		t.Fatal(err)
	}
	// The NodeClaim the provisioner writes for 10 of the pods below on an m5.xlarge.
	cpu := resource.MustParse(scalePodCPU)
	cpu.SetMilli(cpu.MilliValue() * podsPerNode)
	mem := resource.MustParse(scalePodMemory)
	mem.Set(mem.Value() * podsPerNode)
	created := time.Now()
	if err := parallelDo(ctx, nodes, 16, func(int) error {
		nc := solver.BuildNodeClaim(solver.NewNodeClaim{NodePool: np, Requirements: np.Spec.Template.Spec.Requirements,
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem,
				corev1.ResourcePods: *resource.NewQuantity(podsPerNode, resource.DecimalSI)}})
		return env.Client.Create(ctx, nc)
	}); err != nil {
		t.Fatalf("creating NodeClaims: %v", err)
	}
	t.Logf("bench-scale setup: %d NodeClaims created in %.0f s", nodes, time.Since(created).Seconds())
	lastLog := time.Now()
	if err := framework.Poll(ctx, time.Duration(max(1, nodes/1000))*30*time.Minute, 15*time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := cachedClaims(ctx, scalePool)
		if err != nil {
			t.Logf("bench-scale setup: +%.0fs listing NodeClaims: %v", time.Since(created).Seconds(), err)
			return false, "", err
		}
		left := uninitializedClaims(claims)
		status := fmt.Sprintf("%d of %d NodeClaims initialized", len(claims)-left, nodes)
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("bench-scale setup: +%.0fs %s", time.Since(created).Seconds(), status)
		}
		return len(claims) >= nodes && left == 0, status, nil
	}); err != nil {
		t.Fatalf("NodeClaims not initialized: %v", err)
	}
	t.Logf("bench-scale setup: %d NodeClaims initialized %.0f s after their creation", nodes, time.Since(created).Seconds())

	tracker, err := trackPods(ctx, scaleNamespace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tracker.Stop)
	total := nodes * podsPerNode
	tracker.expect(total)
	placePods(t, tracker, nodes)
	// The cluster is built: the limit that kept stray pods from growing it goes.
	patchPool(t, scalePool, func(np *karpv1.NodePool) { np.Spec.Limits = nil })
	return tracker
}

// placePods binds the base cluster's pods without the kube-scheduler, as the "bind pods directly" allows:
// on 2 cores the kube-scheduler and the ReplicaSets' events and creates made 50,000 pods take over 40 minutes.
// Each app's pods are created bound to their nodes (10 a node) with the labels of the app's ReplicaSet and no
// owner; once all run, the ReplicaSet is created with the same replica count and adopts them, so every later
// eviction is replaced through the ReplicaSet and the kube-scheduler as in any cluster. A ReplicaSet whose
// informer has not seen all of its pods yet creates a few more, left Pending by the pool's limit until it
// deletes them again; the setup waits for exactly the pods it made.
func placePods(t *testing.T, tracker *podTracker, nodes int) {
	t.Helper()
	ctx := context.Background()
	nodeList, err := env.Nodes(ctx, scalePool)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodeList) < nodes {
		t.Fatalf("%d Nodes of pool %s, want %d", len(nodeList), scalePool, nodes)
	}
	total := nodes * podsPerNode
	type slot struct{ app, index int }
	var slots []slot
	for i := range scaleApps {
		for j := range appReplicas(total, i) {
			slots = append(slots, slot{i, j})
		}
	}
	templates := make([]corev1.PodTemplateSpec, scaleApps)
	for i := range scaleApps {
		templates[i] = deployment(scaleNamespace, appName(i), "base", scalePool, 0, scalePodCPU, scalePodMemory).Spec.Template
	}
	applied := time.Now()
	var created atomic.Int64
	stopLog := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopLog:
				return
			case <-time.After(15 * time.Second):
				t.Logf("bench-scale setup: +%.0fs %d of %d pods created bound to their nodes", time.Since(applied).Seconds(), created.Load(), total)
			}
		}
	}()
	// Slot k goes to node k mod N: each node gets 10 pods of different apps.
	err = parallelDo(ctx, len(slots), 16, func(k int) error {
		s := slots[k]
		tmpl := templates[s.app]
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace, Name: fmt.Sprintf("%s-%05d", appName(s.app), s.index),
				Labels: maps.Clone(tmpl.Labels), Annotations: maps.Clone(tmpl.Annotations)},
			Spec: *tmpl.Spec.DeepCopy(),
		}
		p.Spec.NodeName = nodeList[k%nodes].Name
		if err := env.Client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		created.Add(1)
		return nil
	})
	close(stopLog)
	if err != nil {
		t.Fatalf("creating pods: %v", err)
	}
	t.Logf("bench-scale setup: %d pods created bound to their nodes in %.0f s", total, time.Since(applied).Seconds())
	waitAllRunning(t, tracker, total, applied, time.Duration(max(1, total/10000))*30*time.Minute)
	adopting := time.Now()
	for i := range scaleApps {
		d := deployment(scaleNamespace, appName(i), "base", scalePool, int32(appReplicas(total, i)), scalePodCPU, scalePodMemory)
		rs := &appsv1.ReplicaSet{ObjectMeta: d.ObjectMeta,
			Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
		if err := env.Client.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	// Every pod owned by its ReplicaSet, and no other pod left.
	lastLog := time.Now()
	if err := framework.Poll(ctx, 30*time.Minute, 5*time.Second, func(ctx context.Context) (bool, string, error) {
		l := &corev1.PodList{}
		if err := env.Client.List(ctx, l, client.InNamespace(scaleNamespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
			return false, "", err
		}
		owned := 0
		for i := range l.Items {
			if metav1.GetControllerOf(&l.Items[i]) != nil && l.Items[i].DeletionTimestamp == nil {
				owned++
			}
		}
		status := fmt.Sprintf("%d of %d pods adopted by their ReplicaSets, %d pods in all", owned, total, len(l.Items))
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("bench-scale setup: +%.0fs %s", time.Since(adopting).Seconds(), status)
		}
		return owned == total && len(l.Items) == total, status, nil
	}); err != nil {
		t.Fatalf("ReplicaSets did not adopt their pods: %v", err)
	}
	t.Logf("bench-scale setup: %d pods adopted by %d ReplicaSets in %.0f s", total, scaleApps, time.Since(adopting).Seconds())
}

func appName(i int) string { return fmt.Sprintf("app-%02d", i) }

// appReplicas: the pods of app i when total pods are shared by the scaleApps apps.
func appReplicas(total, i int) int {
	r := total / scaleApps
	if i < total%scaleApps {
		r++
	}
	return r
}

// addChurn adds a phase's churn figures (nodes launched, deleted and short-lived, evictions per node removed and
// per dollar saved) to its line, with at most 20 of the short-lived NodeClaims named.
func addChurn(t *testing.T, f map[string]any, moves *churn) {
	t.Helper()
	cf, err := moves.figures(context.Background())
	if err != nil {
		t.Errorf("churn figures: %v", err)
		return
	}
	if names, _ := cf["shortLivedNodeClaims"].([]string); len(names) > 20 {
		cf["shortLivedNodeClaims"] = names[:20]
	}
	maps.Copy(f, cf)
}

// patchReplicaSet sets the replicas of a base app's ReplicaSet.
func patchReplicaSet(t *testing.T, namespace, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(rs.DeepCopy())
	rs.Spec.Replicas = &replicas
	if err := env.Client.Patch(ctx, rs, patch); err != nil {
		t.Fatal(err)
	}
}

// patchPool changes the NodePool through a merge patch.
func patchPool(t *testing.T, name string, change func(*karpv1.NodePool)) {
	t.Helper()
	ctx := context.Background()
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	change(np)
	if err := env.Client.Patch(ctx, np, patch); err != nil {
		t.Fatal(err)
	}
}

// cachedClaims lists the pool's NodeClaims from the API server's watch cache (resourceVersion 0): on a loaded
// 2-core machine the cache falls seconds behind etcd and a consistent list waits for it, often past the API
// server's 60 s timeout; the benchmark's polls can take a state a little old instead.
func cachedClaims(ctx context.Context, pool string) ([]karpv1.NodeClaim, error) {
	// A list through a saturated API server could hang for good on its HTTP/2 stream (the 5,000-node drift's poll
	// waited 20 minutes, then forever): each list gets a minute, and a poll takes a failed one for "not yet".
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	l := &karpv1.NodeClaimList{}
	if err := env.Client.List(ctx, l, client.MatchingLabels{karpv1.NodePoolLabelKey: pool},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of %s: %w", pool, err)
	}
	return l.Items, nil
}

// listTimeout bounds each of the benchmark's polling lists.
const listTimeout = time.Minute

// parallelDo runs f(0..n-1) on workers goroutines and returns the first error.
func parallelDo(ctx context.Context, n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// scaleMeter measures one phase: the controller's CPU, memory and API requests, each stack process's CPU, and
// two of the controller's histograms (provisioning and disruption passes).
type scaleMeter struct {
	t        *testing.T
	started  time.Time
	memory   func() map[string]any
	cpu      func() float64
	requests float64
	// requestSeries are the API requests by code and method at the start.
	requestSeries map[string]float64
	aws           [2]float64            // AWS calls: all, DescribeInstances
	passes        map[string][2]float64 // histogram name -> sum, count at the start
	gcCycles      float64               // the Go runtime's collections at the start
	scheduler     framework.Metrics     // the kube-scheduler's metrics at the start
	apiServer     framework.Metrics     // the kube-apiserver's metrics at the start
}

var scaleHistograms = []string{"karpenter_scheduler_scheduling_duration_seconds", "dovetail_scheduler_scheduling_cpu_seconds",
	"karpenter_voluntary_disruption_decision_evaluation_duration_seconds", "dovetail_disruption_decision_cpu_seconds"}

// startMeter starts measuring a phase. The metrics it starts from are read first, in one scrape: at 5,000 nodes
// a scrape of /metrics is over 100 MB and seconds of the controller's CPU, which are not the phase's.
func startMeter(t *testing.T) *scaleMeter {
	t.Helper()
	m := &scaleMeter{t: t, passes: map[string][2]float64{}}
	start := scrape(t)
	m.requests = metricSum(t, start, "client_go_request_total", nil)
	m.requestSeries, _ = start.Series("client_go_request_total")
	m.aws = awsCalls(t, start)
	m.gcCycles = metricSum(t, start, "go_gc_duration_seconds_count", nil)
	for _, h := range scaleHistograms {
		m.passes[h] = [2]float64{metricSum(t, start, h+"_sum", nil), metricSum(t, start, h+"_count", nil)}
	}
	m.scheduler = scrapeScheduler(t)
	m.apiServer = scrapeAPIServer(t)
	m.memory, m.cpu = measuredPhase(t)
	m.started = time.Now()
	return m
}

// scrapeScheduler reads the kube-scheduler's metrics once (logging a failure: its figures are then left out).
func scrapeScheduler(t *testing.T) framework.Metrics {
	t.Helper()
	m, err := env.ScrapeScheduler(context.Background())
	if err != nil {
		t.Logf("bench-scale: %v", err)
	}
	return m
}

// scrapeAPIServer reads the kube-apiserver's metrics once (logging a failure: its figures are then left out).
func scrapeAPIServer(t *testing.T) framework.Metrics {
	t.Helper()
	m, err := env.ScrapeAPIServer(context.Background())
	if err != nil {
		t.Logf("bench-scale: %v", err)
	}
	return m
}

// apiServerFigures adds the requests the kube-apiserver served in the phase, from every client: their rate
// (apiServerRequestsPerSecond) and the ten most frequent kinds (apiServerTopRequests, by verb and resource); all
// kinds go to a log line. On this machine the API server is often the busiest process: these say whose
// requests kept it busy.
func apiServerFigures(t *testing.T, f map[string]any, start, end framework.Metrics, elapsed float64) {
	t.Helper()
	if start == "" || end == "" {
		return
	}
	reqs, err := framework.APIServerRequests(start, end)
	if err != nil {
		t.Logf("bench-scale: the kube-apiserver's metrics: %v", err)
		return
	}
	kinds := slices.SortedFunc(maps.Keys(reqs), func(a, b string) int {
		if c := cmp.Compare(reqs[b], reqs[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var total float64
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		total += reqs[k]
		parts = append(parts, fmt.Sprintf("%s %.0f", k, reqs[k]))
	}
	top := map[string]float64{}
	for _, k := range kinds[:min(10, len(kinds))] {
		top[k] = reqs[k]
	}
	f["apiServerRequestsPerSecond"] = round3(total / elapsed)
	f["apiServerTopRequests"] = top
	t.Logf("bench-scale: the kube-apiserver's requests in the phase, every client: %s", strings.Join(parts, ", "))
}

// schedulerFigures adds what the kube-scheduler did in the phase: its attempts and their mean seconds by result,
// its preemption attempts, the seconds of its busiest extension points and its queues at the end. On this
// machine it is often what decides how fast pending pods run.
func schedulerFigures(t *testing.T, f map[string]any, start, end framework.Metrics) {
	t.Helper()
	if start == "" || end == "" {
		return
	}
	a, err := framework.KubeSchedulerActivity(start, end)
	if err != nil {
		t.Logf("bench-scale: the kube-scheduler's metrics: %v", err)
		return
	}
	rounded := func(m map[string]float64) map[string]float64 {
		out := make(map[string]float64, len(m))
		for k, v := range m {
			out[k] = round3(v)
		}
		return out
	}
	f["kubeSchedulerAttempts"] = a.Attempts
	f["kubeSchedulerMeanAttemptSeconds"] = rounded(a.MeanAttemptSeconds)
	f["kubeSchedulerPreemptionAttempts"] = a.PreemptionAttempts
	f["kubeSchedulerExtensionSeconds"] = rounded(a.ExtensionSeconds)
	f["kubeSchedulerPendingAtEnd"] = a.Pending
}

// scrape reads the controller's metrics once (logging a failure: the figures read from it are then zero).
func scrape(t *testing.T) framework.Metrics {
	t.Helper()
	m, err := env.Scrape(context.Background())
	if err != nil {
		t.Logf("scraping the controller's metrics: %v", err)
	}
	return m
}

func metricSum(t *testing.T, m framework.Metrics, name string, match map[string]string) float64 {
	t.Helper()
	v, err := m.Sum(name, match)
	if err != nil {
		t.Logf("metric %s: %v", name, err)
	}
	return v
}

// awsCalls returns the AWS calls the controller made so far: all, and DescribeInstances.
func awsCalls(t *testing.T, m framework.Metrics) [2]float64 {
	t.Helper()
	return [2]float64{metricSum(t, m, "aws_sdk_go_request_total", nil),
		metricSum(t, m, "aws_sdk_go_request_total", map[string]string{"action": "DescribeInstances"})}
}

// stop ends the phase and returns its figures: seconds, controller cores and CPU seconds, RSS and peak RSS
// (MiB), API requests per second, passes of each histogram with their mean seconds, each stack process's cores,
// and the limit.
func (m *scaleMeter) stop() map[string]any {
	elapsed := time.Since(m.started).Seconds()
	cpu := m.cpu()
	f := m.memory()
	f["seconds"] = round3(elapsed)
	f["controllerCPUSeconds"] = round3(cpu)
	f["controllerCores"] = round3(cpu / elapsed)
	end := scrape(m.t)
	schedulerFigures(m.t, f, m.scheduler, scrapeScheduler(m.t))
	apiServerFigures(m.t, f, m.apiServer, scrapeAPIServer(m.t), elapsed)
	f["apiRequestsPerSecond"] = round3((metricSum(m.t, end, "client_go_request_total", nil) - m.requests) / elapsed)
	if series, err := end.Series("client_go_request_total"); err == nil {
		var parts []string
		for _, labels := range slices.Sorted(maps.Keys(series)) {
			if d := series[labels] - m.requestSeries[labels]; d > 0 {
				parts = append(parts, fmt.Sprintf("{%s} %.0f", labels, d))
			}
		}
		m.t.Logf("bench-scale: the controller's API requests in the phase: %s", strings.Join(parts, ", "))
	}
	aws := awsCalls(m.t, end)
	f["awsCallsPerMinute"] = round3((aws[0] - m.aws[0]) / elapsed * 60)
	f["describeInstancesPerMinute"] = round3((aws[1] - m.aws[1]) / elapsed * 60)
	for _, h := range scaleHistograms {
		sum, count := metricSum(m.t, end, h+"_sum", nil)-m.passes[h][0], metricSum(m.t, end, h+"_count", nil)-m.passes[h][1]
		short := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h, "karpenter_"), "dovetail_"), "_seconds")
		f[short+"_count"] = count
		if count > 0 {
			f[short+"_meanSeconds"] = round3(sum / count)
		}
	}
	// The Go runtime's memory at the end (read after RSS): the heap in use by live objects and garbage not yet
	// collected, in spans holding at least one object, and the collector's next target; free heap pages not yet
	// returned to the system; goroutine stacks; the collector's and allocator's own structures; all the runtime
	// holds from the system.
	for name, metric := range map[string]string{"goHeapAllocMiB": "go_memstats_heap_alloc_bytes",
		"goHeapInuseMiB": "go_memstats_heap_inuse_bytes", "goNextGCMiB": "go_memstats_next_gc_bytes",
		"goStackMiB": "go_memstats_stack_sys_bytes", "goSysMiB": "go_memstats_sys_bytes"} {
		f[name] = round3(metricSum(m.t, end, metric, nil) / (1 << 20))
	}
	idle, released := metricSum(m.t, end, "go_memstats_heap_idle_bytes", nil), metricSum(m.t, end, "go_memstats_heap_released_bytes", nil)
	f["goHeapFreeKeptMiB"] = round3((idle - released) / (1 << 20))
	var runtimeOwn float64
	for _, metric := range []string{"go_memstats_gc_sys_bytes", "go_memstats_mspan_sys_bytes", "go_memstats_mcache_sys_bytes",
		"go_memstats_buck_hash_sys_bytes", "go_memstats_other_sys_bytes"} {
		runtimeOwn += metricSum(m.t, end, metric, nil)
	}
	f["goRuntimeMiB"] = round3(runtimeOwn / (1 << 20))
	// Collections in the phase (since its start, or since the process's start if it was restarted in the phase).
	gc := metricSum(m.t, end, "go_gc_duration_seconds_count", nil)
	if gc >= m.gcCycles {
		gc -= m.gcCycles
	}
	f["gcCycles"] = gc
	f["limit"] = limitOf(f)
	return f
}

// limitOf names what limited a phase: "machine" when its 2 cores were busy (≥ 90%), then the process with the
// most CPU.
func limitOf(f map[string]any) string {
	shares, _ := f["stackCPUCores"].(map[string]float64)
	top, most := "", -1.0
	for name, c := range shares {
		if c > most || (c == most && name < top) {
			top, most = name, c
		}
	}
	if busy, ok := f["machineBusyCores"].(float64); ok && busy >= 0.9*float64(nproc()) {
		return fmt.Sprintf("machine (%.2f of %d cores busy; most: %s %.2f)", busy, nproc(), top, most)
	}
	return fmt.Sprintf("%s (%.2f cores)", top, most)
}

// phaseLine prints the phase's one line.
func phaseLine(t *testing.T, phase string, f map[string]any) {
	t.Helper()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range f {
			if !yield(k) {
				return
			}
		}
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, f[k])
	}
	t.Logf("bench-scale phase=%s%s", phase, b.String())
}

// restPhase: nothing to do for rest (consolidation on, with nothing to consolidate), measured from 90 s after
// consolidation is turned on. At its end: a /metrics
// scrape's time and size, and, with BENCH_SCALE_OUT, a 30 s CPU profile and a heap profile.
func restPhase(t *testing.T, key string, rest time.Duration, out string) map[string]any {
	t.Helper()
	setDisruption(t, scalePool, "30s", "10%")
	// consolidateAfter passes for the nodes one after the other, and each NodeClaim's Consolidatable condition is
	// written (5,000 status writes took 3.5 minutes at 5,000 nodes; every one changes what a decision reads, so
	// decisions ran back to back meanwhile); the first passes after it announce each node's verdict once. What is
	// measured is the cluster after that: every NodeClaim Consolidatable, then 90 s more.
	turnedOn := time.Now()
	if err := framework.Poll(context.Background(), 20*time.Minute, 5*time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := cachedClaims(ctx, scalePool)
		if err != nil {
			return false, "", err
		}
		n := 0
		for i := range claims {
			if claims[i].IsTrue(karpv1.ConditionTypeConsolidatable) {
				n++
			}
		}
		return n == len(claims), fmt.Sprintf("%d of %d NodeClaims Consolidatable", n, len(claims)), nil
	}); err != nil {
		t.Fatal(err)
	}
	settle := 90 * time.Second
	t.Logf("bench-scale rest: consolidation on; every NodeClaim Consolidatable %.0f s later; measuring after %s more",
		time.Since(turnedOn).Seconds(), settle)
	time.Sleep(settle)
	m := startMeter(t)
	deadline := time.Now().Add(rest)
	for time.Now().Before(deadline) {
		time.Sleep(min(time.Minute, time.Until(deadline))) // a fixed-length measurement, not a wait for state
		t.Logf("bench-scale rest: +%.0fs of %s", time.Since(m.started).Seconds(), rest)
	}
	f := m.stop()
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", env.PortBase+88)
	var cpu0, cpu1 float64
	pid, err := controllerPID()
	if err == nil {
		cpu0, err = controllerCPUSeconds(pid)
	}
	var body strings.Builder
	took, size, err2 := timedGet(url, &body)
	if err == nil {
		cpu1, err = controllerCPUSeconds(pid)
	}
	if err != nil {
		t.Logf("reading the controller's CPU around a scrape: %v", err)
	}
	if err2 != nil {
		t.Errorf("scraping %s: %v", url, err2)
	}
	f["scrapeSeconds"], f["scrapeBytes"], f["scrapeCPUSeconds"] = round3(took.Seconds()), size, round3(cpu1-cpu0)
	t.Logf("bench-scale rest: largest metric families of the scrape: %s", largestFamilies(body.String(), 8))
	if claims, err := cachedClaims(context.Background(), scalePool); err == nil {
		f["disrupting"] = disruptingClaims(claims)
	}
	if out != "" {
		profile(t, out)
	}
	phaseLine(t, key, f)
	return f
}

// restartPhase: the controller stopped as a rolling update stops it (SIGTERM: it releases its Lease) and started
// again on the cluster, as after an upgrade or when it takes over a running cluster: the seconds until it stopped,
// until it was ready again and until every controller worked (its caches synced), its CPU seconds and peak RSS by
// then, then the usual figures over settle after that (the first passes over every object). A controller started on the cluster holds its
// objects as one listing decoded them, not as the objects it saw change while the cluster grew, so its heap is
// compared with the one that built the cluster.
func restartPhase(t *testing.T, settle time.Duration) map[string]any {
	t.Helper()
	ctx := context.Background()
	began := time.Now()
	if err := env.StopController(time.Minute); err != nil {
		t.Fatal(err)
	}
	stopped := time.Since(began)
	began = time.Now()
	if err := env.StartController(ctx); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(began)
	// Each controller logs "Starting Controller" when the manager starts it and "Starting workers" once the caches
	// it reads have synced (controller-runtime's lines).
	if err := framework.Poll(ctx, 10*time.Minute, 500*time.Millisecond, func(context.Context) (bool, string, error) {
		b, err := os.ReadFile(env.ControllerLogPath())
		if err != nil {
			return false, "", err
		}
		started, working := bytes.Count(b, []byte(`"msg":"Starting Controller"`)), bytes.Count(b, []byte(`"msg":"Starting workers"`))
		return started > 0 && working >= started, fmt.Sprintf("%d of %d controllers working", working, started), nil
	}); err != nil {
		t.Fatal(err)
	}
	synced := time.Since(began)
	pid, err := controllerPID()
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := controllerCPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := readMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bench-scale restart: stopped in %.1f s, ready %.1f s after its start, every controller working after %.1f s (%.1f CPU s, peak RSS %.1f MiB); measuring %s",
		stopped.Seconds(), ready.Seconds(), synced.Seconds(), cpu, mib(mem.HWM), settle)
	m := startMeter(t)
	time.Sleep(settle) // a fixed-length measurement, not a wait for state
	f := m.stop()
	f["stopSeconds"], f["readySeconds"] = round3(stopped.Seconds()), round3(ready.Seconds())
	f["syncedSeconds"], f["syncedCPUSeconds"], f["syncedPeakRSSMiB"] = round3(synced.Seconds()), round3(cpu), mib(mem.HWM)
	phaseLine(t, "restart", f)
	return f
}

// largestFamilies names the n metric families taking the most bytes of a text exposition, with their series and
// MiB.
func largestFamilies(body string, n int) string {
	type family struct {
		name          string
		series, bytes int
	}
	by := map[string]*family{}
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		fam := by[name]
		if fam == nil {
			fam = &family{name: name}
			by[name] = fam
		}
		fam.series++
		fam.bytes += len(line)
	}
	all := slices.SortedFunc(maps.Values(by), func(a, b *family) int { return b.bytes - a.bytes })
	var parts []string
	for _, fam := range all[:min(n, len(all))] {
		parts = append(parts, fmt.Sprintf("%s %d series %.1f MiB", fam.name, fam.series, float64(fam.bytes)/(1<<20)))
	}
	return strings.Join(parts, ", ")
}

func timedGet(url string, w io.Writer) (time.Duration, int64, error) {
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	n, err := io.Copy(w, resp.Body)
	return time.Since(start), n, err
}

// profile saves a 30 s CPU profile and a heap profile of the controller (ENABLE_PROFILING=true) in out and logs
// the top of each.
func profile(t *testing.T, out string) {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", env.PortBase+88)
	for _, p := range []struct{ file, path, index string }{
		{"cpu.pprof", "profile?seconds=30", "cpu"}, {"heap.pprof", "heap", "inuse_space"}} {
		path := filepath.Join(out, p.file)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = timedGet(base+p.path, f)
		f.Close()
		if err != nil {
			t.Logf("profile %s: %v (is ENABLE_PROFILING=true set in DOVETAIL_ENV?)", p.path, err)
			continue
		}
		top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", "-sample_index="+p.index,
			filepath.Join(env.RepoRoot, "bin", "dovetail"), path).CombinedOutput()
		if err == nil {
			t.Logf("bench-scale %s (%s):\n%s", p.file, path, top)
		}
	}
}

// provisionPhase: pods of the mix of Karpenter's performance suite (hostname-spread, large and do-not-disrupt
// pods, 500 : 500 : 100) applied at once into the cluster on a NodePool of their own.
func provisionPhase(t *testing.T, total int, limit time.Duration) map[string]any {
	t.Helper()
	ctx := context.Background()
	objs, err := framework.NodePool(growPool, framework.PoolOptions{ConsolidateAfter: "Never", Budgets: []map[string]any{{"nodes": "0"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "NodePool" {
			unstructured.RemoveNestedField(o.Object, "spec", "limits")
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	tracker, err := trackPods(ctx, growNamespace)
	if err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	tracker.expect(total)
	dnd := total / 11
	spread := (total - dnd) / 2
	big := total - dnd - spread
	m := startMeter(t)
	s := deployment(growNamespace, "spread", "grow", growPool, int32(spread), "900m", "3174Mi")
	s.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	b := deployment(growNamespace, "big", "grow", growPool, int32(big), "3500m", "28Gi")
	d := deployment(growNamespace, "dnd", "grow", growPool, int32(dnd), "900m", "3174Mi")
	d.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	applied := time.Now()
	for _, dep := range []client.Object{s, b, d} {
		if err := env.Client.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
	}
	first := scrapeScheduler(t)
	waitErr := pollAllRunning(t, tracker, total, applied, limit, func(ctx context.Context) string {
		return provisionProgress(ctx, t, tracker, first)
	})
	_, bound, at := tracker.milestones()
	_, running, _ := tracker.counts()
	f := m.stop()
	f["podsPending"] = total
	f["podsRunningAtEnd"] = running
	f["allRunning"] = !at.IsZero()
	if !at.IsZero() {
		f["secondsToAllRunning"] = round3(at.Sub(applied).Seconds())
	}
	if !bound.IsZero() {
		f["secondsToAllBound"] = round3(bound.Sub(applied).Seconds())
	}
	// The provisioner sees a pod only once the kube-scheduler has tried it and marked it unschedulable: the
	// kube-scheduler's first turn through the pods (secondsToLastMarked) against the last NodeClaim created for
	// them (secondsToLastNodeClaimCreated) shows which of the two the pods waited on.
	marked, lastMarked := tracker.marked()
	f["podsMarkedUnschedulable"] = marked
	if !lastMarked.IsZero() {
		f["secondsToLastMarked"] = round3(lastMarked.Sub(applied).Seconds())
	}
	if claims, err := cachedClaims(ctx, growPool); err == nil {
		f["nodesLaunched"] = len(claims)
		f["nodesInitialized"] = len(claims) - uninitializedClaims(claims)
		created, initialized := lastNodeClaimTimes(claims)
		if !created.IsZero() {
			f["secondsToLastNodeClaimCreated"] = round3(created.Sub(applied).Seconds())
		}
		if !initialized.IsZero() {
			f["secondsToLastInitialized"] = round3(initialized.Sub(applied).Seconds())
		}
	}
	phaseLine(t, "provision", f)
	if waitErr != nil {
		t.Errorf("provision: %v", waitErr)
	}
	return f
}

// provisionProgress describes the pods, the pool's NodeClaims and the kube-scheduler's attempts since first.
func provisionProgress(ctx context.Context, t *testing.T, tracker *podTracker, first framework.Metrics) string {
	t.Helper()
	bound, running := tracker.boundRunning()
	marked, _ := tracker.marked()
	out := fmt.Sprintf("provision: pods marked unschedulable %d, bound %d, Running %d", marked, bound, running)
	if claims, err := cachedClaims(ctx, growPool); err == nil {
		out += fmt.Sprintf("; nodeclaims %d, initialized %d", len(claims), len(claims)-uninitializedClaims(claims))
	}
	if now := scrapeScheduler(t); first != "" && now != "" {
		if a, err := framework.KubeSchedulerActivity(first, now); err == nil {
			out += fmt.Sprintf("; kube-scheduler attempts %v, pending %v", a.Attempts, a.Pending)
		}
	}
	return out
}

// consolidatePhase: 30 % of the base cluster's pods deleted (every ReplicaSet scaled to 70 %), consolidation on
// with a 10 % budget; it ends once quiet passed without a node draining.
func consolidatePhase(t *testing.T, tracker *podTracker, nodes int, quiet time.Duration) map[string]any {
	t.Helper()
	ctx := context.Background()
	setDisruption(t, scalePool, "30s", "10%")
	before, err := cachedClaims(ctx, scalePool)
	if err != nil {
		t.Fatal(err)
	}
	moves, err := newChurn(ctx, scalePool, before)
	if err != nil {
		t.Fatal(err)
	}
	total := nodes * podsPerNode
	kept := 0
	m := startMeter(t)
	for i := range scaleApps {
		k := appReplicas(total, i) * 7 / 10
		kept += k
		patchReplicaSet(t, scaleNamespace, appName(i), int32(k))
	}
	tracker.expect(kept)
	start := time.Now()
	lastDrain, lastLog := start, start
	maxNotRunning := 0
	// The quiet time counts from when the scale-in's pods are gone (at most 10 minutes after it), not from the
	// scale-in: at 5,000 nodes the 15,000 pods took over 3 minutes to terminate, and consolidation starts on the
	// nodes they leave.
	scaledIn := false
	if err := framework.Poll(ctx, 2*time.Hour, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := cachedClaims(ctx, scalePool)
		if err != nil {
			return false, "", err
		}
		moves.observe(claims, time.Now())
		d := disruptingClaims(claims)
		pods, running, _ := tracker.counts()
		if !scaledIn && (pods <= kept || time.Since(start) > 10*time.Minute) {
			scaledIn = true
			lastDrain = time.Now()
		}
		if d > 0 || !scaledIn {
			lastDrain = time.Now()
		}
		maxNotRunning = max(maxNotRunning, pods-running)
		status := fmt.Sprintf("%d nodes, %d disrupting, %d pods, %d Running, %.0fs since a node drained", len(claims), d, pods, running, time.Since(lastDrain).Seconds())
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("bench-scale consolidate: +%.0fs %s", time.Since(start).Seconds(), status)
		}
		return time.Since(lastDrain) >= quiet, status, nil
	}); err != nil {
		t.Fatal(err)
	}
	f := m.stop()
	after, err := cachedClaims(ctx, scalePool)
	if err != nil {
		t.Fatal(err)
	}
	f["nodesBefore"], f["nodesAfter"] = len(before), len(after)
	f["secondsToLastDrain"] = round3(lastDrain.Sub(start).Seconds())
	f["maxPodsNotRunning"] = maxNotRunning
	addChurn(t, f, moves)
	phaseLine(t, "consolidate", f)
	return f
}

// driftPhase: the base NodePool's template changed (every node drifts) with a 10 % budget; it ends when no
// drifted NodeClaim is left and none is being disrupted, or after stopAfter (when not 0) with the part done
// reported (driftStopped).
func driftPhase(t *testing.T, tracker *podTracker, nodes int, stopAfter time.Duration) map[string]any {
	t.Helper()
	ctx := context.Background()
	before, err := cachedClaims(ctx, scalePool)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for i := range before {
		old[before[i].Name] = true
	}
	moves, err := newChurn(ctx, scalePool, before)
	if err != nil {
		t.Fatal(err)
	}
	pods, _, _ := tracker.counts()
	tracker.expect(pods)
	tracker.armMin()
	m := startMeter(t)
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: scalePool}, np); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}}
	// Drift replaces; consolidation must not take nodes away meanwhile.
	np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
	if np.Spec.Template.Annotations == nil {
		np.Spec.Template.Annotations = map[string]string{}
	}
	np.Spec.Template.Annotations["dovetail.test/revision"] = "2"
	if err := env.Client.Patch(ctx, np, patch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lastLog := start
	maxNotRunning, replaced := 0, 0
	var perMinute []int
	stopped := false
	if err := framework.Poll(ctx, time.Duration(max(1, nodes/500))*30*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		if stopAfter > 0 && time.Since(start) >= stopAfter {
			// Checked first: a poll whose list fails must not keep the phase from stopping.
			stopped = true
			t.Logf("bench-scale drift: stopped after %s as BENCH_SCALE_DRIFT_FOR asks", stopAfter)
			return true, "", nil
		}
		claims, err := cachedClaims(ctx, scalePool)
		if err != nil {
			return false, "", err
		}
		moves.observe(claims, time.Now())
		left := 0
		for i := range claims {
			if old[claims[i].Name] {
				left++
			}
		}
		replaced = len(before) - left
		for minute := int(time.Since(start).Minutes()); len(perMinute) <= minute; {
			perMinute = append(perMinute, replaced)
		}
		pods, running, _ := tracker.counts()
		maxNotRunning = max(maxNotRunning, pods-running)
		d := disruptingClaims(claims)
		status := fmt.Sprintf("%d of %d drifted nodes left, %d disrupting, %d of %d pods Running", left, len(before), d, running, pods)
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("bench-scale drift: +%.0fs %s", time.Since(start).Seconds(), status)
		}
		return left == 0 && d == 0, status, nil
	}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	f := m.stop()
	mostUnschedulable, _ := tracker.waitedForRoom()
	f["nodesDrifted"] = len(before)
	f["driftSeconds"] = round3(took.Seconds())
	f["nodesReplaced"] = replaced
	f["nodesPerMinute"] = round3(float64(replaced) / took.Minutes())
	if stopped {
		f["driftStopped"] = true
		// At the rate so far, the whole drift would take this long.
		if replaced > 0 {
			f["driftSecondsProjected"] = round3(took.Seconds() * float64(len(before)) / float64(replaced))
		}
	}
	f["maxPodsNotRunning"] = maxNotRunning
	f["maxPodsUnschedulable"] = mostUnschedulable
	if replaced > 0 {
		f["controllerCPUSecondsPerNode"] = round3(f["controllerCPUSeconds"].(float64) / float64(replaced))
	}
	if claims, err := cachedClaims(ctx, scalePool); err == nil {
		f["nodesAfter"] = len(claims)
	}
	addChurn(t, f, moves)
	phaseLine(t, "drift", f)
	return f
}
