package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels of client_go_request_duration_seconds: the request's verb (as RecordKubeRequest rewrites it) and the
// group, version, resource and subresource of its path.
const (
	LabelVerb        = "verb"
	LabelAPIVersion  = "version"
	LabelSubresource = "subresource"
)

func newClientGoMetrics(m *Metrics) {
	m.ClientGoRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "client_go_request_total", Help: helpOf("client_go_request_total"),
	}, []string{LabelCode, LabelMethod})
	m.ClientGoRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "client_go_request_duration_seconds", Help: helpOf("client_go_request_duration_seconds"),
		Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 20),
	}, []string{LabelVerb, LabelGroup, LabelAPIVersion, LabelKind, LabelSubresource})
}

// CountKubeResult counts one answer of the API server to the controller's clients: code is the HTTP status (or
// "<error>" without one, as client-go reports it) and method the HTTP method.
func (m *Metrics) CountKubeResult(code, method string) {
	m.ClientGoRequests.WithLabelValues(code, method).Inc()
}

// RecordKubeRequest observes the latency of one request of the controller's clients. path is the request's URL
// path template, as client-go reports it ("/api/v1/namespaces/{namespace}/pods/{name}/eviction"); a path outside
// /api and /apis (discovery, /version) is not recorded. The verb says what the call did: POST is CREATE, a GET
// without {name} is LIST, a PUT is UPDATE with {name} and CREATE without; other verbs are kept.
func (m *Metrics) RecordKubeRequest(verb, path string, d time.Duration) {
	res, ok := parseKubePath(path)
	if !ok {
		return
	}
	named := strings.Contains(path, "{name}")
	switch {
	case verb == "POST", verb == "PUT" && !named:
		verb = "CREATE"
	case verb == "PUT":
		verb = "UPDATE"
	case verb == "GET" && !named:
		verb = "LIST"
	}
	m.ClientGoRequestDuration.WithLabelValues(verb, res.group, res.version, res.resource, res.subresource).Observe(d.Seconds())
}

// kubeResource is what a request path names.
type kubeResource struct {
	group, version, resource, subresource string
}

// parseKubePath reads the group, version, resource and subresource of an API path: /api/<version>/... for the
// core group, /apis/<group>/<version>/... otherwise; a namespaced path has namespaces/<ns> before the resource,
// and a subresource follows the object's name.
func parseKubePath(path string) (kubeResource, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var r kubeResource
	var rest []string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		r.version, rest = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		r.group, r.version, rest = segs[1], segs[2], segs[3:]
	default:
		return kubeResource{}, false
	}
	// namespaces/<ns>/<resource>/...: the resource is the one after the namespace; namespaces/<ns> alone is a
	// Namespace.
	if rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:]
	}
	r.resource = rest[0]
	if len(rest) == 3 {
		r.subresource = rest[2]
	}
	return r, true
}
