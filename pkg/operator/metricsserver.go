package operator

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsPath is where Prometheus scrapes (the chart's Service and ServiceMonitor name it).
const metricsPath = "/metrics"

// textExposer is a registry that writes its largest families as text exposition from their entries
// (metrics.Registry).
type textExposer interface {
	prometheus.Gatherer
	Exposition(also ...prometheus.Gatherer) (func(io.Writer) error, error)
}

// servedMetrics is the metrics server's filter: controller-runtime's server answers /metrics from its
// process-wide registry only, so the filter answers that path from both that registry and the run's own (reg);
// the other paths (pprof) go to their handlers unchanged. A name in both registries fails the scrape with an error
// naming it, as a duplicate in one registry would.
func servedMetrics(reg prometheus.Gatherer) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	var combined http.Handler
	if t, ok := reg.(textExposer); ok {
		combined = textMetrics(t, ctrlmetrics.Registry)
	} else {
		combined = promhttp.HandlerFor(prometheus.Gatherers{ctrlmetrics.Registry, reg},
			promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	}
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

// textMetrics answers every scrape in Prometheus text format 0.0.4, whatever format the scraper asks for
// (Prometheus reads the format of the answer from its Content-Type): the per-node and per-pod families are written
// from their entries, which no other format allows as cheaply. The answer is gzip-compressed when the scraper
// accepts it. A gathering error answers 500 with the error, before anything is written.
func textMetrics(reg textExposer, also ...prometheus.Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		write, err := reg.Exposition(also...)
		if err != nil {
			http.Error(w, "An error has occurred while gathering metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // the level is valid
			defer gz.Close()
			out = gz
		}
		// The status is sent: an error now is the connection's, and the scraper sees a truncated answer.
		_ = write(out)
	})
}

// acceptsGzip says whether an Accept-Encoding header accepts gzip (listed without q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(coding) != "gzip" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
