package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestObserveAWSCall: a call retried after a 500 counts once under its last code, each attempt under its own code,
// and observes one retry.
func TestObserveAWSCall(t *testing.T) {
	m := NewForTest()
	m.ObserveAWSCall("EC2", "CreateFleet", 200, 1500*time.Millisecond, []AWSAttempt{
		{Code: 500, Duration: 200 * time.Millisecond}, {Code: 200, Duration: 300 * time.Millisecond},
	})
	m.ObserveAWSCall("SSM", "GetParameter", -1, time.Second, []AWSAttempt{{Code: -1, Duration: time.Second}})
	want := `
# HELP aws_sdk_go_request_total ` + helpOf("aws_sdk_go_request_total") + `
# TYPE aws_sdk_go_request_total counter
aws_sdk_go_request_total{action="CreateFleet",code="200",service="EC2"} 1
aws_sdk_go_request_total{action="GetParameter",code="-1",service="SSM"} 1
# HELP aws_sdk_go_request_attempt_total ` + helpOf("aws_sdk_go_request_attempt_total") + `
# TYPE aws_sdk_go_request_attempt_total counter
aws_sdk_go_request_attempt_total{action="CreateFleet",code="200",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="CreateFleet",code="500",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="GetParameter",code="-1",service="SSM"} 1
`
	if err := testutil.CollectAndCompare(m.AWSRequests, strings.NewReader(want), "aws_sdk_go_request_total"); err != nil {
		t.Error(err)
	}
	if err := testutil.CollectAndCompare(m.AWSRequestAttempts, strings.NewReader(want), "aws_sdk_go_request_attempt_total"); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"retry count sum", sampleSum(t, m.AWSRequestRetries, "EC2", "CreateFleet", "200"), 1},
		{"duration sum", sampleSum(t, m.AWSRequestDuration, "EC2", "CreateFleet", "200"), 1.5},
		{"attempt duration sum, under the call's code", sampleSum(t, m.AWSRequestAttemptDuration, "EC2", "CreateFleet", "200"), 0.5},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// sampleSum is the sum of the histogram series of h with the given label values.
func sampleSum(t *testing.T, h *prometheus.HistogramVec, values ...string) float64 {
	t.Helper()
	var out dto.Metric
	if err := h.WithLabelValues(values...).(prometheus.Histogram).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetHistogram().GetSampleSum()
}
