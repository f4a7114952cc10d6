package operator

import (
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsPath is where Prometheus scrapes (the chart's Service and ServiceMonitor name it).
const metricsPath = "/metrics"

// servedMetrics is the metrics server's filter: controller-runtime's server answers /metrics from its
// process-wide registry only, so the filter answers that path from both that registry and the run's own (reg);
// the other paths (pprof) go to their handlers unchanged. A name in both registries fails the scrape with an error
// naming it, as a duplicate in one registry would.
func servedMetrics(reg prometheus.Gatherer) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	combined := promhttp.HandlerFor(prometheus.Gatherers{ctrlmetrics.Registry, reg},
		promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	return func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
		return func(_ logr.Logger, next http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == metricsPath {
					combined.ServeHTTP(w, r)
					return
				}
				next.ServeHTTP(w, r)
			}), nil
		}, nil
	}
}
