package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// UpPair starts two stacks that share one AWS simulator, so one simulated account: a's stack runs the
// simulator, which also serves b's cluster (each instance's Node goes to the cluster whose API server its user
// data names), and b's controller calls a's simulator. Give both the same ClusterName to model two clusters
// sharing a name, and distinct state folders and port bases (ports are used from PortBase to PortBase+89).
// Callers should Down both stacks (b first) even when UpPair fails; a nil stack was not started.
func UpPair(ctx context.Context, a, b Options) (*Stack, *Stack, error) {
	if a.PortBase == b.PortBase || a.StateDir == b.StateDir {
		return nil, nil, fmt.Errorf("the two stacks need their own port bases and state folders")
	}
	// b's control plane first: the simulator connects to its API server when it starts.
	sb := &Stack{Options: b, RepoRoot: RepoRoot()}
	if err := sb.ClusterUp(ctx); err != nil {
		return nil, sb, fmt.Errorf("starting the second control plane: %w", err)
	}
	a.SimulatorFlags = append(append([]string(nil), a.SimulatorFlags...),
		"--other-cluster-kubeconfig="+filepath.Join(b.StateDir, "cluster", "kubeconfig"))
	sa, err := Up(ctx, a)
	if err != nil {
		return sa, sb, fmt.Errorf("starting the first stack: %w", err)
	}
	b.SharedSimulator = sa.AWSEndpoint
	sb, err = Up(ctx, b)
	if err != nil {
		return sa, sb, fmt.Errorf("starting the second stack: %w", err)
	}
	return sa, sb, nil
}

// CallLog returns the simulator's record of mutating EC2 and IAM calls (GET /_awssim/calls).
func (s *Stack) CallLog(ctx context.Context) (awssim.CallLog, error) {
	var out awssim.CallLog
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.AWSEndpoint+"/_awssim/calls", nil)
	if err != nil {
		return out, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, fmt.Errorf("reading the simulator's call log: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("reading the simulator's call log: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("decoding the simulator's call log: %w", err)
	}
	return out, nil
}

// ClusterUID returns the cluster's identity: the UID of its kube-system namespace.
func (s *Stack) ClusterUID(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the kube-system namespace: %w", err)
	}
	return string(ns.UID), nil
}

// MetricSum returns the sum of the series of a metric whose labels include every name="value" pair of match
// (nil: all series), from the controller's /metrics endpoint; for a histogram, name its _count or _sum. Each call
// scrapes the endpoint: to read several metrics at one moment, Scrape once and Sum from it.
func (s *Stack) MetricSum(ctx context.Context, name string, match map[string]string) (float64, error) {
	m, err := s.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	return m.Sum(name, match)
}

// Metrics is one scrape of the controller's /metrics endpoint, in the text exposition format.
type Metrics string

// Scrape reads the controller's /metrics endpoint once. At 5,000 nodes a scrape is over 100 MB and seconds of the
// controller's CPU: a benchmark reading many metrics scrapes once.
func (s *Stack) Scrape(ctx context.Context) (Metrics, error) {
	body, err := s.scrape(ctx)
	return Metrics(body), err
}

// Series returns the value of each series of a metric, by its labels as exposed (`code="200",method="GET"`; "" for
// an unlabelled metric).
func (m Metrics) Series(name string) (map[string]float64, error) {
	out := map[string]float64{}
	for line := range strings.Lines(string(m)) {
		line = strings.TrimSuffix(line, "\n")
		rest, found := strings.CutPrefix(line, name)
		if !found || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels, value := "", rest
		if strings.HasPrefix(rest, "{") {
			end := strings.Index(rest, "}")
			if end < 0 {
				return nil, fmt.Errorf("metric line %q: no closing brace", line)
			}
			labels, value = rest[1:end], rest[end+1:]
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		out[labels] += f
	}
	return out, nil
}

// Sum returns the sum of the series of a metric whose labels include every name="value" pair of match (nil: all
// series); for a histogram, name its _count or _sum.
func (m Metrics) Sum(name string, match map[string]string) (float64, error) {
	series, err := m.Series(name)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for labels, v := range series {
		if matches(labels, match) {
			sum += v
		}
	}
	return sum, nil
}

// matches reports whether labels, as exposed, include every name="value" pair of match.
func matches(labels string, match map[string]string) bool {
	for k, v := range match {
		if !strings.Contains(","+labels+",", ","+k+"=\""+v+"\",") {
			return false
		}
	}
	return true
}

func (s *Stack) scrape(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", s.PortBase+88), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	return string(body), nil
}

// Metric returns the value of an unlabelled metric (gauge or counter) from the controller's /metrics endpoint
// (port PortBase+88, see hack/stack-common.sh); ok is false when the controller does not export it.
func (s *Stack) Metric(ctx context.Context, name string) (value float64, ok bool, err error) {
	body, err := s.scrape(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, line := range strings.Split(body, "\n") {
		if v, found := strings.CutPrefix(line, name+" "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil, err
		}
	}
	return 0, false, nil
}

// Launches returns every instance the simulator launched since it started, oldest first, terminated ones included,
// with their current (or last) tags (GET /_awssim/launches).
func (s *Stack) Launches(ctx context.Context) ([]awssim.LaunchRecord, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.AWSEndpoint+"/_awssim/launches", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the simulator's launches: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the simulator's launches: %s", resp.Status)
	}
	var out []awssim.LaunchRecord
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding the simulator's launches: %w", err)
	}
	return out, nil
}

// ScrapeScheduler reads the local kube-scheduler's /metrics endpoint once (port PortBase+59, see
// hack/cluster-common.sh), as the cluster's admin: its attempts, their time and its queues say when the
// kube-scheduler, not the controller, limits how fast pending pods run.
func (s *Stack) ScrapeScheduler(ctx context.Context) (Metrics, error) {
	if s.RESTConfig == nil {
		return "", fmt.Errorf("scraping the kube-scheduler's metrics: the stack has no client configuration")
	}
	// The admin's client certificate from the kubeconfig; the kube-scheduler serves a certificate it signed itself.
	cfg := rest.AnonymousClientConfig(s.RESTConfig)
	cfg.CertData, cfg.KeyData = s.RESTConfig.CertData, s.RESTConfig.KeyData
	cfg.CertFile, cfg.KeyFile = s.RESTConfig.CertFile, s.RESTConfig.KeyFile
	cfg.Insecure, cfg.CAData, cfg.CAFile = true, nil, ""
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", fmt.Errorf("scraping the kube-scheduler's metrics: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", s.PortBase+59), nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping the kube-scheduler's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("scraping the kube-scheduler's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("scraping the kube-scheduler's metrics: %s: %.200s", resp.Status, body)
	}
	return Metrics(body), nil
}

// SchedulerActivity is what the kube-scheduler did between two scrapes of its metrics.
type SchedulerActivity struct {
	// Attempts are its scheduling attempts by result (scheduled, unschedulable, error).
	Attempts map[string]float64
	// MeanAttemptSeconds is the mean time of an attempt, by result.
	MeanAttemptSeconds map[string]float64
	// PreemptionAttempts counts the attempts that tried preemption (each after a failed attempt).
	PreemptionAttempts float64
	// ExtensionSeconds is the time spent at each extension point of its framework (Filter, PostFilter, ...).
	ExtensionSeconds map[string]float64
	// Pending are the pods in each of its queues (active, backoff, unschedulable, gated) at the second scrape.
	Pending map[string]float64
}

// KubeSchedulerActivity reads what the kube-scheduler did between the scrapes start and end (ScrapeScheduler).
func KubeSchedulerActivity(start, end Metrics) (SchedulerActivity, error) {
	a := SchedulerActivity{}
	var err error
	if a.Attempts, err = deltaBy(start, end, "scheduler_schedule_attempts_total", "result"); err != nil {
		return a, err
	}
	sums, err := deltaBy(start, end, "scheduler_scheduling_attempt_duration_seconds_sum", "result")
	if err != nil {
		return a, err
	}
	counts, err := deltaBy(start, end, "scheduler_scheduling_attempt_duration_seconds_count", "result")
	if err != nil {
		return a, err
	}
	a.MeanAttemptSeconds = map[string]float64{}
	for result, n := range counts {
		if n > 0 {
			a.MeanAttemptSeconds[result] = sums[result] / n
		}
	}
	preemptions, err := deltaBy(start, end, "scheduler_preemption_attempts_total", "")
	if err != nil {
		return a, err
	}
	a.PreemptionAttempts = preemptions[""]
	if a.ExtensionSeconds, err = deltaBy(start, end, "scheduler_framework_extension_point_duration_seconds_sum", "extension_point"); err != nil {
		return a, err
	}
	if a.Pending, err = deltaBy("", end, "scheduler_pending_pods", "queue"); err != nil {
		return a, err
	}
	return a, nil
}

// deltaBy sums the series of a metric by the value of one label ("" sums them all) at end, minus the same at
// start; groups that did not change are left out.
func deltaBy(start, end Metrics, name, label string) (map[string]float64, error) {
	return deltaByKey(start, end, name, func(labels string) string { return labelValue(labels, label) })
}

// deltaByKey sums the series of a metric by key(labels) at end, minus the same at start; groups that did not
// change are left out.
func deltaByKey(start, end Metrics, name string, key func(labels string) string) (map[string]float64, error) {
	by := func(m Metrics) (map[string]float64, error) {
		series, err := m.Series(name)
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for labels, v := range series {
			out[key(labels)] += v
		}
		return out, nil
	}
	before, err := by(start)
	if err != nil {
		return nil, err
	}
	after, err := by(end)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out, nil
}

// labelValue is the value of the label name in labels as exposed (`a="1",b="2"`), "" when name is "" or absent.
func labelValue(labels, name string) string {
	if name == "" {
		return ""
	}
	for rest := labels; rest != ""; {
		k, after, ok := strings.Cut(rest, `="`)
		if !ok {
			return ""
		}
		v, next, _ := strings.Cut(after, `"`)
		if k == name {
			return v
		}
		rest = strings.TrimPrefix(next, ",")
	}
	return ""
}

// ScrapeAPIServer reads the kube-apiserver's /metrics endpoint once, as the cluster's admin.
func (s *Stack) ScrapeAPIServer(ctx context.Context) (Metrics, error) {
	if s.Kube == nil {
		return "", fmt.Errorf("scraping the kube-apiserver's metrics: the stack has no client")
	}
	body, err := s.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("scraping the kube-apiserver's metrics: %w", err)
	}
	return Metrics(body), nil
}

// APIServerRequests returns the requests the kube-apiserver served between two scrapes of its metrics
// (apiserver_request_total), from every client, by verb and resource (`PATCH nodeclaims/status`, `WATCH pods`);
// kinds with no request between the scrapes are left out.
func APIServerRequests(start, end Metrics) (map[string]float64, error) {
	return deltaByKey(start, end, "apiserver_request_total", func(labels string) string {
		kind := labelValue(labels, "verb") + " " + labelValue(labels, "resource")
		if sub := labelValue(labels, "subresource"); sub != "" {
			kind += "/" + sub
		}
		return kind
	})
}
