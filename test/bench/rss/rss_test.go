//go:build bench

package rss

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/test"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// Knobs, all optional: DOVETAIL_BENCH_RSS_NODES (1000), DOVETAIL_BENCH_RSS_PODS_PER_NODE (10),
// DOVETAIL_BENCH_RSS_SETTLE (2m: how long the controller runs with everything in place),
// DOVETAIL_BENCH_PORT_BASE (19000: metrics, health and simulator ports are base+1..3),
// DOVETAIL_MEMORY_LIMIT (192MiB, as hack/stack-up.sh; or DOVETAIL_GOMEMLIMIT), DOVETAIL_BENCH_RSS_OUT (folder for the controller's log and
// heap profile; default a temporary folder, removed at the end), DOVETAIL_BENCH_RSS_BIN (folder holding the
// dovetail and awssim binaries; default bin/).
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestControllerMemoryAt1000Nodes runs the controller binary (bin/dovetail, `make build`) against an envtest API
// server and the AWS simulator (bin/awssim) and reports its RSS while it launches and registers the NodeClaims,
// while the pods arrive, and during a settle period with provisioning passes (pending pods that fit the existing
// nodes) and consolidation passes (full nodes: nothing to do), then its heap profile.
func TestControllerMemoryAt1000Nodes(t *testing.T) {
	nodes := envInt(t, "DOVETAIL_BENCH_RSS_NODES", 1000)
	podsPerNode := envInt(t, "DOVETAIL_BENCH_RSS_PODS_PER_NODE", 10)
	portBase := envInt(t, "DOVETAIL_BENCH_PORT_BASE", 19000)
	settle := 2 * time.Minute
	if v := os.Getenv("DOVETAIL_BENCH_RSS_SETTLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DOVETAIL_BENCH_RSS_SETTLE: %v", err)
		}
		settle = d
	}
	// The container's limit as the chart passes it (MEMORY_LIMIT); DOVETAIL_GOMEMLIMIT sets GOMEMLIMIT instead.
	memLimit := "MEMORY_LIMIT=192MiB"
	if v := os.Getenv("DOVETAIL_MEMORY_LIMIT"); v != "" {
		memLimit = "MEMORY_LIMIT=" + v
	}
	if v := os.Getenv("DOVETAIL_GOMEMLIMIT"); v != "" {
		memLimit = "GOMEMLIMIT=" + v
	}
	out := os.Getenv("DOVETAIL_BENCH_RSS_OUT")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	root := framework.RepoRoot()
	bin := os.Getenv("DOVETAIL_BENCH_RSS_BIN") // another build to compare, e.g. of main
	if bin == "" {
		bin = filepath.Join(root, "bin")
	}
	for _, b := range []string{"dovetail", "awssim"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("bin/%s missing: run 'make build' (%v)", b, err)
		}
	}

	ctrllog.SetLogger(logr.Discard()) // the API server's warnings about the test's own requests
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	scheme, err := framework.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, scheme)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := test.Kubeconfig(t, env.Config)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, env.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}

	simPort, metricsPort, healthPort := portBase+3, portBase+1, portBase+2
	simURL := fmt.Sprintf("http://127.0.0.1:%d", simPort)
	startProcess(t, filepath.Join(out, "awssim.log"), nil, filepath.Join(bin, "awssim"), "serve",
		"--listen", fmt.Sprintf("127.0.0.1:%d", simPort), "--kubeconfig", kubeconfig, "--region", framework.Region,
		"--cluster-name", "dovetail", "--cluster-endpoint", env.Config.Host, "--cluster-ca-file", caFile)
	waitHTTP(t, ctx, simURL+"/_awssim/healthz")
	controllerLog := filepath.Join(out, "dovetail.log")
	pid := startProcess(t, controllerLog, []string{
		"KUBECONFIG=" + kubeconfig, "AWS_ENDPOINT_URL=" + simURL, "AWS_REGION=" + framework.Region,
		"AWS_ACCESS_KEY_ID=123456789012", "AWS_SECRET_ACCESS_KEY=local-simulator", "AWS_EC2_METADATA_DISABLED=true",
		"CLUSTER_NAME=dovetail", "CLUSTER_ENDPOINT=" + env.Config.Host, fmt.Sprintf("METRICS_PORT=%d", metricsPort),
		fmt.Sprintf("HEALTH_PROBE_PORT=%d", healthPort), "DISABLE_LEADER_ELECTION=true", memLimit,
		"ENABLE_PROFILING=true",
	}, filepath.Join(bin, "dovetail"))
	waitHTTP(t, ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
	mem := sample(ctx, pid)
	defer mem.stop()
	mem.phase("start")
	start := time.Now()

	// A NodePool of one on-demand instance type (m5.xlarge), so the full nodes have no cheaper replacement. Its
	// budget allows no disruption until the pods are bound (the nodes launched first would be empty for longer
	// than consolidateAfter, and deleted), then 10 %: the settle phase runs full consolidation decisions.
	objs, err := framework.NodePool("bench", framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "30s", Budgets: []map[string]any{{"nodes": "0"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "NodePool" {
			unstructured.RemoveNestedField(o.Object, "spec", "limits")
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetKind(), err)
		}
	}
	np := &karpv1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: "bench"}, np); err != nil {
		t.Fatal(err)
	}
	mem.phase("launch")
	// The NodeClaims the provisioner would create for 10 pods of 350m/1Gi and a DaemonSet pod each.
	if err := parallel(ctx, nodes, 16, func(int) error {
		nc := solver.BuildNodeClaim(solver.NewNodeClaim{NodePool: np, Requirements: np.Spec.Template.Spec.Requirements,
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3600m"), corev1.ResourceMemory: resource.MustParse("10368Mi"),
				corev1.ResourcePods: *resource.NewQuantity(int64(podsPerNode+1), resource.DecimalSI)}})
		return c.Create(ctx, nc)
	}); err != nil {
		t.Fatalf("creating NodeClaims: %v", err)
	}
	// The simulator writes each instance's Node; this loop plays the kubelet's status (Ready, images).
	ready := map[string]bool{}
	var initialized []string
	if err := framework.Poll(ctx, 30*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		nl := &corev1.NodeList{}
		if err := c.List(ctx, nl); err != nil {
			return false, "", err
		}
		var todo []string
		for _, n := range nl.Items {
			if !ready[n.Name] {
				todo = append(todo, n.Name)
			}
		}
		var mu sync.Mutex
		if err := parallel(ctx, len(todo), 16, func(i int) error {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: todo[i]}, n); err != nil {
				return client.IgnoreNotFound(err)
			}
			// The node lifecycle controller (not running here) removes the not-ready taint once the node is Ready.
			base := n.DeepCopy()
			var kept []corev1.Taint
			for _, taint := range n.Spec.Taints {
				if taint.Key != corev1.TaintNodeNotReady {
					kept = append(kept, taint)
				}
			}
			if len(kept) != len(n.Spec.Taints) {
				n.Spec.Taints = kept
				if err := c.Patch(ctx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
					if apierrors.IsConflict(err) {
						return nil // the next round tries again
					}
					return client.IgnoreNotFound(err)
				}
				base = n.DeepCopy()
			}
			nodeStatus(n, time.Now())
			if err := c.Status().Patch(ctx, n, client.MergeFrom(base)); err != nil {
				return client.IgnoreNotFound(err)
			}
			mu.Lock()
			ready[n.Name] = true
			mu.Unlock()
			return nil
		}); err != nil {
			return false, "", err
		}
		ncs := &karpv1.NodeClaimList{}
		if err := c.List(ctx, ncs); err != nil {
			return false, "", err
		}
		initialized = initialized[:0]
		for _, nc := range ncs.Items {
			if nc.IsTrue(karpv1.ConditionTypeInitialized) {
				initialized = append(initialized, nc.Status.NodeName)
			}
		}
		return len(initialized) >= nodes, fmt.Sprintf("%d NodeClaims, %d Nodes, %d initialized", len(ncs.Items), len(nl.Items), len(initialized)), nil
	}); err != nil {
		t.Fatalf("NodeClaims not initialized: %v", err)
	}
	t.Logf("%d NodeClaims initialized %.0f s after start", len(initialized), time.Since(start).Seconds())

	mem.phase("pods")
	const ns = "shop"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ds := daemonSet(ns)
	if err := c.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	deployments := 50
	if err := parallel(ctx, nodes*(podsPerNode+1), 24, func(i int) error {
		node := initialized[i%nodes]
		var p *corev1.Pod
		if i < nodes {
			p = daemonPod(ds, node)
		} else {
			p = appPod(ns, fmt.Sprintf("service-%02d", i%deployments), node, i)
		}
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		base := p.DeepCopy()
		runningStatus(p, fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256), time.Now())
		return c.Status().Patch(ctx, p, client.MergeFrom(base))
	}); err != nil {
		t.Fatalf("creating pods: %v", err)
	}
	t.Logf("%d pods running %.0f s after start", nodes*(podsPerNode+1), time.Since(start).Seconds())

	// Pending pods that fit the nodes' remaining room: provisioning passes plan them onto existing nodes.
	mem.phase("settle")
	budget := &karpv1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: "bench"}, budget); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(budget.DeepCopy())
	budget.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}}
	if err := c.Patch(ctx, budget, patch); err != nil {
		t.Fatalf("opening the disruption budget: %v", err)
	}
	if err := parallel(ctx, 20, 4, func(i int) error {
		p := appPod(ns, "pending", "", i)
		p.Spec.NodeName = ""
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
		p.Spec.Containers[0].Resources.Limits = nil
		p.Spec.TopologySpreadConstraints = nil // a zone spread would rather open nodes in the other zones
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		base := p.DeepCopy()
		unschedulable(p, time.Now())
		return c.Status().Patch(ctx, p, client.MergeFrom(base))
	}); err != nil {
		t.Fatalf("creating pending pods: %v", err)
	}
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(settle):
	}
	metrics := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	profile := filepath.Join(out, "heap.pprof")
	if err := download(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", metricsPort), profile); err != nil {
		t.Errorf("heap profile: %v", err)
	}
	metricsAfterGC := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	final, _ := readMemory(pid)

	ncs := &karpv1.NodeClaimList{}
	if err := c.List(ctx, ncs); err != nil {
		t.Fatal(err)
	}
	logText, _ := os.ReadFile(controllerLog)
	t.Logf("machine: %d CPUs, load %s; %s; %d nodes, %d pods a node + a DaemonSet pod, %d pending pods",
		runtime.NumCPU(), loadAvg(), memLimit, nodes, podsPerNode, 20)
	for _, p := range mem.phases() {
		t.Logf("phase %-7s %6.0f s  peak RSS %6.1f MiB", p.name, p.seconds, mib(p.peak))
	}
	t.Logf("at the end: RSS %.1f MiB (VmHWM %.1f MiB); heap in use %.1f MiB, after a forced GC %.1f MiB (live objects %.1f MiB); go_memstats_sys %.1f MiB",
		mib(final.RSS), mib(final.HWM), mib(int64(metrics["go_memstats_heap_inuse_bytes"])),
		mib(int64(metricsAfterGC["go_memstats_heap_inuse_bytes"])), mib(int64(metricsAfterGC["go_memstats_heap_alloc_bytes"])),
		mib(int64(metricsAfterGC["go_memstats_sys_bytes"])))
	t.Logf("NodeClaims at the end: %d; controller log lines 'adopting the instance already launched': %d, 'launched nodeclaim': %d",
		len(ncs.Items), bytes.Count(logText, []byte("adopting the instance already launched")), bytes.Count(logText, []byte(`"launched nodeclaim"`)))
	t.Logf("heap profile: %s (go tool pprof -top -sample_index=inuse_space bin/dovetail %s)", profile, profile)
	if top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", "-sample_index=inuse_space",
		filepath.Join(bin, "dovetail"), profile).CombinedOutput(); err == nil {
		t.Logf("pprof -top:\n%s", top)
	}
	if len(ncs.Items) != nodes {
		t.Errorf("%d NodeClaims at the end, want %d (the controller replaced or removed some)", len(ncs.Items), nodes)
	}
}

// startProcess starts a command with its output in logPath and stops it (SIGTERM, then SIGKILL) when the test
// ends. It returns the pid.
func startProcess(t *testing.T, logPath string, env []string, name string, args ...string) int {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, and stopped with the test binary should that be killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		f.Close()
	})
	return cmd.Process.Pid
}

func waitHTTP(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := framework.Poll(ctx, 90*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	}); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
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
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
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

type memory struct{ RSS, HWM int64 }

// readMemory reads VmRSS and VmHWM from /proc/<pid>/status.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return memory{}, err
		}
		if key == "VmRSS" {
			m.RSS = kb * 1024
		} else {
			m.HWM = kb * 1024
		}
	}
	return m, nil
}

// sampler keeps the peak RSS of each phase, sampled every 250 ms.
type sampler struct {
	stop context.CancelFunc
	mu   sync.Mutex
	list []*phase
}

type phase struct {
	name    string
	begin   time.Time
	seconds float64
	peak    int64
}

func sample(ctx context.Context, pid int) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{stop: cancel}
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := readMemory(pid); err == nil {
				s.mu.Lock()
				if n := len(s.list); n > 0 && m.RSS > s.list[n-1].peak {
					s.list[n-1].peak = m.RSS
				}
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) phase(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, &phase{name: name, begin: time.Now()})
}

func (s *sampler) phases() []phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]phase, len(s.list))
	for i, p := range s.list {
		end := time.Now()
		if i+1 < len(s.list) {
			end = s.list[i+1].begin
		}
		out[i] = *p
		out[i].seconds = end.Sub(p.begin).Seconds()
	}
	return out
}

// scrape reads the gauges and counters of a Prometheus text endpoint that have no labels.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("scraping %s: %v", url, err)
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	return out
}

func download(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
