package framework

import "testing"

func TestMetricsSum(t *testing.T) {
	m := Metrics(`# HELP aws_sdk_go_request_total AWS calls.
# TYPE aws_sdk_go_request_total counter
aws_sdk_go_request_total{action="DescribeInstances",service="EC2"} 3
aws_sdk_go_request_total{action="RunInstances",service="EC2"} 2
aws_sdk_go_request_total_other 100
client_go_request_total 7.5
h_seconds_sum{pool="a"} 1.5
h_seconds_count{pool="a"} 2
h_seconds_count{pool="ab"} 4
`)
	for _, tc := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{name: "aws_sdk_go_request_total", want: 5},
		{name: "aws_sdk_go_request_total", match: map[string]string{"action": "DescribeInstances"}, want: 3},
		{name: "aws_sdk_go_request_total", match: map[string]string{"action": "Describe"}, want: 0},
		{name: "client_go_request_total", want: 7.5},
		{name: "h_seconds_count", match: map[string]string{"pool": "a"}, want: 2},
		{name: "h_seconds_count", want: 6},
		{name: "missing_total", want: 0},
	} {
		got, err := m.Sum(tc.name, tc.match)
		if err != nil {
			t.Errorf("Sum(%s, %v): %v", tc.name, tc.match, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.match, got, tc.want)
		}
	}
	if _, err := Metrics("x_total{a=\"b\" 1\n").Sum("x_total", nil); err == nil {
		t.Error("Sum of a line without a closing brace: no error")
	}
}

func TestMetricsSeries(t *testing.T) {
	m := Metrics("client_go_request_total{code=\"200\",method=\"GET\"} 3\nclient_go_request_total{code=\"200\",method=\"LIST\"} 2\nclient_go_request_totals 9\nup 1\n")
	got, err := m.Series("client_go_request_total")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{`code="200",method="GET"`: 3, `code="200",method="LIST"`: 2}
	if len(got) != len(want) || got[`code="200",method="GET"`] != 3 || got[`code="200",method="LIST"`] != 2 {
		t.Errorf("Series = %v, want %v", got, want)
	}
	if got, err := m.Series("up"); err != nil || got[""] != 1 {
		t.Errorf("Series(up) = %v, %v; want the unlabelled series", got, err)
	}
}
