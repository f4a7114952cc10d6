//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// karpenterMetric is an entry of test/karpenter/metrics/testdata/karpenter-metrics.json, the metrics Karpenter's
// own packages register (read by the oracle in test/karpenter/metrics).
type karpenterMetric struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Labels   []string `json:"labels"`
	Versions []string `json:"versions"`
}

// unscrapedMetrics are Karpenter metrics this scenario cannot make appear, and why: a metric with labels shows in a
// scrape only once something recorded a value for it, in Karpenter as in Dovetail. Every other metric of the list
// must be in a scrape with at least Karpenter's labels.
var unscrapedMetrics = map[string]string{
	// The local stack runs the controller with DISABLE_LEADER_ELECTION=true (hack/stack-up.sh).
	"leader_election_master_status": "leader election is off on the local stack",
	// Karpenter v1.14 serves no webhook; controller-runtime registers its webhook server's metrics regardless.
	"controller_runtime_webhook_latency_seconds":    "no webhook is served",
	"controller_runtime_webhook_requests_in_flight": "no webhook is served",
	"controller_runtime_webhook_requests_total":     "no webhook is served",
	// Failures the scenario does not cause.
	"karpenter_cloudprovider_instance_termination_failures_total": "needs a TerminateInstances call that fails",
	"karpenter_interruption_instance_status_unhealthy_total":      "needs an EC2 instance status check that fails",
	"karpenter_nodepools_cost_tracker_errors_total":               "needs the NodePool cost tracker to fail",
	"karpenter_voluntary_disruption_consolidation_timeouts_total": "needs a consolidation search that runs out of time",
	"karpenter_voluntary_disruption_failed_validations_total":     "needs a disruption candidate that changes during validation",
	"karpenter_consolidation_score":                               "needs a NodePool with consolidationPolicy: Balanced",
	"karpenter_voluntary_disruption_queue_failures_total":         "needs a replacement that never initializes",
	// Node repair waits out a toleration (20 s here) on top of the launch; repair_test.go covers it.
	"karpenter_nodeclaims_unhealthy_disrupted_total": "needs node repair",
	// CapacityBuffers (feature gate CapacityBuffer) are covered by capacitybuffer_test.go; the scenario has none.
	"operator_capacitybuffer_status_condition_count":                  "needs a CapacityBuffer",
	"operator_capacitybuffer_status_condition_current_status_seconds": "needs a CapacityBuffer",
	"operator_capacitybuffer_status_condition_transition_seconds":     "needs a CapacityBuffer",
	"operator_capacitybuffer_status_condition_transitions_total":      "needs a CapacityBuffer",
	"operator_capacitybuffer_termination_current_time_seconds":        "needs a CapacityBuffer",
	"operator_capacitybuffer_termination_duration_seconds":            "needs a CapacityBuffer",
	// Karpenter v1.15 features behind feature gates the scenario does not exercise.
	"karpenter_nodes_reboots_total":                                    "v1.15: needs a reboot for repair; repairreboot_test.go scrapes it",
	"karpenter_nodes_reboot_duration_seconds":                          "v1.15: needs a reboot for repair; repairreboot_test.go scrapes it",
	"karpenter_nodes_reboot_recovery_duration_seconds":                 "v1.15: needs a reboot for repair; repairreboot_test.go scrapes it",
	"karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes": "v1.15: feature gate PodDeletionCostManagement",
	"karpenter_pod_deletion_cost_pod_annotation_writes_total":          "v1.15: feature gate PodDeletionCostManagement",
	"karpenter_voluntary_disruption_terminate_first_decisions_total":   "v1.15: feature gates TerminateFirstDrift, TerminateFirstRepair",
	// Observed only for an object seen terminating; a NodePool has no finalizer, so it is gone at once.
	"operator_nodepool_termination_duration_seconds": "a NodePool is never seen terminating",
}

// notYetMetrics are the Karpenter metrics Dovetail does not serve yet (docs/metrics.md, "Differences from
// Karpenter"), and notYetLabels the Karpenter labels its metrics still lack, as "metric/label". They are reported,
// not failed; one that is served now fails the test until it is taken off these lists, so they only shrink.
var notYetMetrics = map[string]bool{
	"controller_runtime_reconcile_timeouts_total": true,
}

var notYetLabels = map[string]bool{}

// transientMetrics are Karpenter metrics whose series exist only for moments (while an object terminates, while a
// scheduling pass runs): the scenario's terminations and passes take about a second, so a scrape every 5 seconds
// may miss them. When a scrape has one, its labels and type are checked like the others'; it is not required.
var transientMetrics = map[string]bool{
	"operator_nodeclaim_termination_current_time_seconds":    true,
	"operator_node_termination_current_time_seconds":         true,
	"operator_termination_current_time_seconds":              true,
	"operator_ec2nodeclass_termination_current_time_seconds": true,
	"operator_nodepool_termination_current_time_seconds":     true,
	"karpenter_scheduler_unfinished_work_seconds":            true,
	// From the trigger's first sight of a pending pod to the pass that decides on it: about a second.
	"karpenter_pods_provisioning_scheduling_undecided_time_seconds": true,
	// While a pod waits for its node or to start: seconds for the scenario's pods, which a scrape every 5 seconds
	// may miss on a fast or a loaded machine alike (seen missing in a clean-clone run, 2026-11-29).
	"karpenter_pods_provisioning_unbound_time_seconds":   true,
	"karpenter_pods_provisioning_unstarted_time_seconds": true,
	// Counted when a consolidation move is decided; the scenario's scale-in may end in an emptiness deletion the last
	// scrape misses.
	"karpenter_consolidation_moves_total": true,
}

// scrapeMarker starts each scrape in the scrapes file (test/dashboards reads it: scrapes.go).
const scrapeMarker = "# dovetail-scrape-at "

// scraper takes a scrape of the controller's /metrics every interval until stopped, as Prometheus would.
type scraper struct {
	mu      sync.Mutex
	scrapes []timedScrape
	stop    chan struct{}
	done    chan struct{}
	err     error
}

type timedScrape struct {
	at   time.Time
	body string
}

func startScraper(interval time.Duration) *scraper {
	s := &scraper{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			s.take()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *scraper) take() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := scrapeController(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	s.scrapes = append(s.scrapes, timedScrape{at: time.Now(), body: body})
}

// finish takes n more scrapes (interval apart) after the scenario, stops, and returns every scrape.
func (s *scraper) finish(ctx context.Context, n int) ([]timedScrape, error) {
	s.mu.Lock()
	want := len(s.scrapes) + n
	s.mu.Unlock()
	err := framework.Poll(ctx, time.Minute, time.Second, func(context.Context) (bool, string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.scrapes) >= want, fmt.Sprintf("%d of %d scrapes", len(s.scrapes), want), s.err
	})
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.scrapes), err
}

func scrapeController(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", env.PortBase+88), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("scraping the controller's metrics: %s", resp.Status)
	}
	return string(b), nil
}

// writeScrapes writes the scrapes in the format test/dashboards reads, gzipped when the name ends in .gz.
func writeScrapes(path string, scrapes []timedScrape) error {
	var b bytes.Buffer
	for _, s := range scrapes {
		fmt.Fprintf(&b, "%s%d\n%s", scrapeMarker, s.at.UnixMilli(), s.body)
		if !strings.HasSuffix(s.body, "\n") {
			b.WriteByte('\n')
		}
	}
	out := b.Bytes()
	if strings.HasSuffix(path, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(out); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		out = z.Bytes()
	}
	return os.WriteFile(path, out, 0o644)
}

// TestKarpenterMetricsScraped runs a short scenario that exercises what Karpenter's metrics describe — scale-out
// onto spot nodes with a DaemonSet, a launch that fails for want of capacity, a spot interruption, consolidation of
// the nodes a scale-in empties, and their termination — while scraping the controller like Prometheus every 5
// seconds. Then every metric Karpenter registers (test/karpenter/metrics/testdata/karpenter-metrics.json) must be
// in the last scrape with at least Karpenter's label names. The scrapes are written to the stack's state folder
// and, with DOVETAIL_METRICS_SCRAPES_OUT, to that file, for test/dashboards to evaluate dashboard queries on.
func TestKarpenterMetricsScraped(t *testing.T) {
	ctx := context.Background()
	const pool, icePool = "dashboards", "dashboards-ice"
	scr := startScraper(5 * time.Second)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			close(scr.stop)
			<-scr.done
		}
	})
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large", "c5.large"},
		CapacityTypes: []string{karpv1.CapacityTypeSpot}, ConsolidateAfter: "5s",
		Budgets: []map[string]any{{"nodes": "100%"}}})
	// A pool whose only instance type is out of capacity everywhere: its NodeClaims fail to launch.
	setupPool(t, icePool, framework.PoolOptions{InstanceTypes: []string{"r5.large"}, CapacityTypes: []string{"on-demand"}})
	t.Cleanup(func() {
		if err := env.SimAdmin(context.Background(), http.MethodPut, "faults", map[string]any{}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := env.SimAdmin(ctx, http.MethodPost, "faults/capacity", map[string]any{"instanceType": "r5.large", "zone": "*", "capacityType": "*"}); err != nil {
		t.Fatal(err)
	}

	// Scale-out: three pods, one a node, requests and limits, and a DaemonSet on the pool's nodes.
	if err := env.Client.Create(ctx, agentDaemonSet(pool, "agent", pool)); err != nil {
		t.Fatal(err)
	}
	dep := framework.Deployment(pool, "app", pool, 3, "1500m", "1Gi")
	dep.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, framework.Deployment(icePool, "app", icePool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 3, 2*time.Minute)
	err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		st, err := env.SimulatorState(ctx)
		n := 0
		for k, v := range st.CapacityRefusals {
			if strings.HasPrefix(k, "r5.large/") {
				n += v
			}
		}
		return n > 0, "no r5.large launch refused yet", err
	})
	if err != nil {
		t.Fatalf("the launch in nodepool %s never failed: %v", icePool, err)
	}
	// The failing pool's EC2NodeClass loses its subnets and gets them back: SubnetsReady goes True → False → True,
	// so the EC2NodeClass condition transition histogram has observations, as a Karpenter user's subnet mistake
	// would give it.
	flipSubnetsReady(t, icePool)
	// The failing NodePool and its EC2NodeClass go (their pod stays pending): the EC2NodeClass's termination (it
	// has a finalizer) is timed.
	for _, o := range []client.Object{&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: icePool}},
		&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: icePool}}} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// Spot interruption of one node: drained, replaced.
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil || len(claims) == 0 {
		t.Fatalf("nodeclaims of %s: %d, %v", pool, len(claims), err)
	}
	victim := claims[0]
	if err := env.SendInterruptionEvent(ctx, framework.InterruptionEvent{Kind: "spot-interruption",
		InstanceID: framework.InstanceID(victim.Status.ProviderID)}); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		for _, c := range claims {
			if c.Name == victim.Name {
				return false, "interrupted nodeclaim still there", nil
			}
		}
		p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels{"app": "app"})
		return p.PodsRunning >= 3, p.String(), err
	})
	if err != nil {
		t.Fatalf("after the spot interruption of %s: %v\n%s", victim.Name, err, env.Describe(pool, pool))
	}

	// Scale-in to one pod: the emptied nodes are consolidated and terminated.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = ptr.To[int32](1)
	if err := env.Client.Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		return len(claims) == 1, fmt.Sprintf("%d nodeclaims", len(claims)), err
	})
	if err != nil {
		t.Fatalf("consolidation after the scale-in: %v\n%s", err, env.Describe(pool, pool))
	}

	scrapes, err := scr.finish(ctx, 2)
	stopped = true
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d scrapes over %s", len(scrapes), scrapes[len(scrapes)-1].at.Sub(scrapes[0].at).Round(time.Second))
	outs := []string{filepath.Join(env.StateDir, "metrics-scrapes.prom")}
	if p := os.Getenv("DOVETAIL_METRICS_SCRAPES_OUT"); p != "" {
		outs = append(outs, p)
	}
	for _, p := range outs {
		if err := writeScrapes(p, scrapes); err != nil {
			t.Fatal(err)
		}
		t.Logf("scrapes written to %s", p)
	}
	bodies := make([]string, len(scrapes))
	for i, sc := range scrapes {
		bodies[i] = sc.body
	}
	checkKarpenterMetrics(t, bodies)
}

// flipSubnetsReady points the EC2NodeClass's subnet selector at no subnet, waits until SubnetsReady is False, puts
// the selector back and waits until it is True again.
func flipSubnetsReady(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	terms := nc.Spec.SubnetSelectorTerms
	set := func(terms []awsv1.SubnetSelectorTerm, want metav1.ConditionStatus) {
		t.Helper()
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		base := nc.DeepCopy()
		nc.Spec.SubnetSelectorTerms = terms
		if err := env.Client.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
		err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
			got := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
				return false, "", err
			}
			c := got.GetCondition(awsv1.ConditionTypeSubnetsReady)
			if c == nil {
				return false, "no SubnetsReady condition", nil
			}
			return c.Status == want && c.ObservedGeneration == got.Generation, fmt.Sprintf("SubnetsReady %s (generation %d of %d)", c.Status, c.ObservedGeneration, got.Generation), nil
		})
		if err != nil {
			t.Fatalf("ec2nodeclass %s: waiting for SubnetsReady %s: %v", name, want, err)
		}
	}
	set([]awsv1.SubnetSelectorTerm{{Tags: map[string]string{"dovetail.sh/e2e-no-such-subnet": "true"}}}, metav1.ConditionFalse)
	set(terms, metav1.ConditionTrue)
}

// checkKarpenterMetrics fails the test with every Karpenter metric missing from all the scrapes, every label name
// Karpenter gives a metric that no scrape has, and every metric of another type, in one message.
func checkKarpenterMetrics(t *testing.T, bodies []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "test", "karpenter", "metrics", "testdata", "karpenter-metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Metrics []karpenterMetric `json:"metrics"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	scraped := map[string]map[string]bool{}
	types := map[string]string{}
	for i, body := range bodies {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("parsing scrape %d: %v", i, err)
		}
		for name, fam := range fams {
			if scraped[name] == nil {
				scraped[name] = map[string]bool{}
			}
			for _, m := range fam.GetMetric() {
				for _, lp := range m.GetLabel() {
					scraped[name][lp.GetName()] = true
				}
			}
			types[name] = strings.ToLower(fam.GetType().String())
		}
	}
	var missing, labelGaps, typeGaps, notYet, arrived []string
	for _, m := range list.Metrics {
		if _, ok := unscrapedMetrics[m.Name]; ok {
			continue
		}
		labels, ok := scraped[m.Name]
		if !ok && transientMetrics[m.Name] {
			continue
		}
		if notYetMetrics[m.Name] {
			if ok {
				arrived = append(arrived, m.Name)
			} else {
				notYet = append(notYet, m.Name)
			}
			continue
		}
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (%s, %s; labels %s)", m.Name, m.Type, strings.Join(m.Versions, " "), strings.Join(m.Labels, ",")))
			continue
		}
		var lacking []string
		for _, l := range m.Labels {
			switch {
			case notYetLabels[m.Name+"/"+l] && labels[l]:
				arrived = append(arrived, m.Name+"/"+l)
			case notYetLabels[m.Name+"/"+l]:
				notYet = append(notYet, m.Name+"/"+l)
			case !labels[l]:
				lacking = append(lacking, l)
			}
		}
		if len(lacking) > 0 {
			labelGaps = append(labelGaps, fmt.Sprintf("%s (%s): no label %s", m.Name, strings.Join(m.Versions, " "), strings.Join(lacking, ",")))
		}
		if got := types[m.Name]; got != m.Type && !(m.Type == "histogram" && got == "gauge_histogram") {
			typeGaps = append(typeGaps, fmt.Sprintf("%s: %s, Karpenter's is a %s", m.Name, got, m.Type))
		}
	}
	missing, labelGaps, typeGaps = dedupe(missing), dedupe(labelGaps), dedupe(typeGaps)
	if notYet = dedupe(notYet); len(notYet) > 0 {
		t.Logf("%d Karpenter metrics and labels not served yet (notYetMetrics, notYetLabels):\n  %s", len(notYet), strings.Join(notYet, "\n  "))
	}
	if arrived = dedupe(arrived); len(arrived) > 0 {
		t.Errorf("served now, take them off notYetMetrics / notYetLabels:\n  %s", strings.Join(arrived, "\n  "))
	}
	if len(missing)+len(labelGaps)+len(typeGaps) > 0 {
		t.Errorf("the controller's scrape does not serve Karpenter's metrics as Karpenter does:\n"+
			"%d metrics missing:\n  %s\n%d metrics without some of Karpenter's labels:\n  %s\n%d metrics of another type:\n  %s",
			len(missing), strings.Join(missing, "\n  "), len(labelGaps), strings.Join(labelGaps, "\n  "),
			len(typeGaps), strings.Join(typeGaps, "\n  "))
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

// agentDaemonSet returns a DaemonSet whose pods run on the NodePool's nodes and request a little cpu and memory.
func agentDaemonSet(namespace, name, nodePool string) *appsv1.DaemonSet {
	labels := map[string]string{"daemon": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: nodePool},
					Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
						},
					}},
				},
			},
		},
	}
}
