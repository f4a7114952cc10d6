package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels of the aws_sdk_go_request_* metrics: the SDK's service ID, the API action and an HTTP status code.
const (
	LabelAWSService = "service"
	LabelAWSAction  = "action"
)

// awsSDKBuckets are the latency buckets Karpenter's SDK metrics use: 10 ms growing by half at each step.
var awsSDKBuckets = prometheus.ExponentialBuckets(0.01, 1.5, 20)

// AWSAttempt is one HTTP request of an AWS call: its status code (-1 without a response) and duration.
type AWSAttempt struct {
	Code     int
	Duration time.Duration
}

func newAWSSDKMetrics(m *Metrics) {
	labels := []string{LabelAWSService, LabelAWSAction, LabelCode}
	m.AWSRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aws_sdk_go_request_total", Help: helpOf("aws_sdk_go_request_total"),
	}, labels)
	m.AWSRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aws_sdk_go_request_duration_seconds", Help: helpOf("aws_sdk_go_request_duration_seconds"), Buckets: awsSDKBuckets,
	}, labels)
	m.AWSRequestRetries = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aws_sdk_go_request_retry_count", Help: helpOf("aws_sdk_go_request_retry_count"),
		Buckets: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	}, labels)
	m.AWSRequestAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aws_sdk_go_request_attempt_total", Help: helpOf("aws_sdk_go_request_attempt_total"),
	}, labels)
	m.AWSRequestAttemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aws_sdk_go_request_attempt_duration_seconds", Help: helpOf("aws_sdk_go_request_attempt_duration_seconds"),
		Buckets: awsSDKBuckets,
	}, labels)
}

// ObserveAWSCall records one AWS operation that returned: code is the status of its last attempt. As in
// Karpenter, an attempt's count carries the attempt's own code while its duration carries the call's, and the
// retry count is the attempts beyond the first.
func (m *Metrics) ObserveAWSCall(service, action string, code int, d time.Duration, attempts []AWSAttempt) {
	c := strconv.Itoa(code)
	m.AWSRequests.WithLabelValues(service, action, c).Inc()
	m.AWSRequestDuration.WithLabelValues(service, action, c).Observe(d.Seconds())
	m.AWSRequestRetries.WithLabelValues(service, action, c).Observe(float64(max(len(attempts)-1, 0)))
	for _, a := range attempts {
		m.AWSRequestAttempts.WithLabelValues(service, action, strconv.Itoa(a.Code)).Inc()
		m.AWSRequestAttemptDuration.WithLabelValues(service, action, c).Observe(a.Duration.Seconds())
	}
}
