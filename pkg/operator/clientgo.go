package operator

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/dovetail/dovetail/pkg/metrics"
)

// kubeRequestMetrics forwards client-go's request metrics, which are process-wide (k8s.io/client-go/tools/metrics
// holds one result and one latency sink for every client of the process), to the metrics of the run under way.
// Each run registers client_go_request_* in its own registry; a second run in the process (tests) takes over the
// forwarding, and between runs nothing is recorded. The sinks installed before (controller-runtime's
// rest_client_requests_total) keep receiving every request.
type kubeRequestMetrics struct {
	current     atomic.Pointer[metrics.Metrics]
	prevResult  clientmetrics.ResultMetric
	prevLatency clientmetrics.LatencyMetric
}

// kubeRequests is the process's forwarder, installed in client-go by the first run.
var (
	kubeRequests     kubeRequestMetrics
	kubeRequestsOnce sync.Once
)

// forwardKubeRequests makes client-go's request metrics go to m until the returned stop is called (or another run
// takes over).
func forwardKubeRequests(m *metrics.Metrics) (stop func()) {
	kubeRequestsOnce.Do(func() {
		// client-go's Register takes effect once per process and controller-runtime has used it at init, so the
		// sinks are replaced directly, keeping the ones in place to chain to.
		kubeRequests.prevResult, kubeRequests.prevLatency = clientmetrics.RequestResult, clientmetrics.RequestLatency
		clientmetrics.RequestResult = kubeResultSink{&kubeRequests}
		clientmetrics.RequestLatency = kubeLatencySink{&kubeRequests}
	})
	kubeRequests.current.Store(m)
	return func() { kubeRequests.current.CompareAndSwap(m, nil) }
}

type kubeResultSink struct{ k *kubeRequestMetrics }

func (s kubeResultSink) Increment(ctx context.Context, code, method, host string) {
	if m := s.k.current.Load(); m != nil {
		m.CountKubeResult(code, method)
	}
	if s.k.prevResult != nil {
		s.k.prevResult.Increment(ctx, code, method, host)
	}
}

type kubeLatencySink struct{ k *kubeRequestMetrics }

func (s kubeLatencySink) Observe(ctx context.Context, verb string, u url.URL, latency time.Duration) {
	if m := s.k.current.Load(); m != nil {
		m.RecordKubeRequest(verb, u.Path, latency)
	}
	if s.k.prevLatency != nil {
		s.k.prevLatency.Observe(ctx, verb, u, latency)
	}
}
