package operator

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/dovetail/dovetail/pkg/metrics"
)

// TestForwardKubeRequests: client-go's process-wide sinks reach the run under way only; a second run takes over,
// and after a run stops nothing reaches it. controller-runtime's sink keeps counting throughout.
func TestForwardKubeRequests(t *testing.T) {
	first, second := metrics.NewForTest(), metrics.NewForTest()
	request := func() {
		clientmetrics.RequestResult.Increment(context.Background(), "200", "GET", "api")
		clientmetrics.RequestLatency.Observe(context.Background(), "GET", url.URL{Path: "/api/v1/nodes"}, time.Millisecond)
	}
	count := func(m *metrics.Metrics) [2]int {
		return [2]int{
			int(testutil.ToFloat64(m.ClientGoRequests.WithLabelValues("200", "GET"))),
			testutil.CollectAndCount(m.ClientGoRequestDuration),
		}
	}
	stopFirst := forwardKubeRequests(first)
	request()
	stopSecond := forwardKubeRequests(second)
	request()
	request()
	stopFirst() // the first run ends after the second started: the second keeps the sinks
	request()
	stopSecond()
	request()
	if got, want := count(first), [2]int{1, 1}; got != want {
		t.Errorf("first run: %v (requests, latency series), want %v", got, want)
	}
	if got, want := count(second), [2]int{3, 1}; got != want {
		t.Errorf("second run: %v (requests, latency series), want %v", got, want)
	}
	if kubeRequests.prevResult == nil {
		t.Error("controller-runtime's result sink is not chained")
	}
}
