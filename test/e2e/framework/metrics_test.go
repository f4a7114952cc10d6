package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

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

// TestKubeSchedulerActivity: attempts and their mean time by result, preemptions and extension point time are
// differences between the two scrapes; the queues are read at the end.
func TestKubeSchedulerActivity(t *testing.T) {
	start := Metrics(`# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 100
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 10
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 5
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 100
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="unschedulable"} 2
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="unschedulable"} 10
scheduler_preemption_attempts_total 10
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="default-scheduler",status="Success"} 1
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="default-scheduler",status="Unschedulable"} 2
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Bind",profile="default-scheduler",status="Success"} 3
scheduler_pending_pods{queue="active"} 50
scheduler_pending_pods{queue="unschedulable"} 7
`)
	end := Metrics(`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 150
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 30
scheduler_schedule_attempts_total{profile="other",result="unschedulable"} 10
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 10
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 150
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="unschedulable"} 14
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="unschedulable"} 40
scheduler_preemption_attempts_total 40
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="default-scheduler",status="Success"} 4
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="default-scheduler",status="Unschedulable"} 9
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Bind",profile="default-scheduler",status="Success"} 3
scheduler_pending_pods{queue="active"} 20
scheduler_pending_pods{queue="backoff"} 5
scheduler_pending_pods{queue="unschedulable"} 0
`)
	got, err := KubeSchedulerActivity(start, end)
	if err != nil {
		t.Fatal(err)
	}
	want := SchedulerActivity{
		Attempts:           map[string]float64{"scheduled": 50, "unschedulable": 30},
		MeanAttemptSeconds: map[string]float64{"scheduled": 0.1, "unschedulable": 0.4},
		PreemptionAttempts: 30,
		ExtensionSeconds:   map[string]float64{"Filter": 10},
		Pending:            map[string]float64{"active": 20, "backoff": 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KubeSchedulerActivity (-want +got):\n%s", diff)
	}
	if _, err := KubeSchedulerActivity(start, Metrics("scheduler_pending_pods{queue=\"active\" 1\n")); err == nil {
		t.Error("KubeSchedulerActivity of a broken line: no error")
	}
}

func TestLabelValue(t *testing.T) {
	for _, tc := range []struct{ labels, name, want string }{
		{`a="1",b="2"`, "b", "2"},
		{`a="1",b="2"`, "a", "1"},
		{`a="1",ab="2"`, "b", ""},
		{`a="1"`, "", ""},
		{``, "a", ""},
		{`a="",b="x"`, "b", "x"},
	} {
		if got := labelValue(tc.labels, tc.name); got != tc.want {
			t.Errorf("labelValue(%q, %q) = %q, want %q", tc.labels, tc.name, got, tc.want)
		}
	}
}

// TestAPIServerRequests: requests between two scrapes, summed over codes and clients, by verb and resource with
// its subresource; kinds that did not grow are left out.
func TestAPIServerRequests(t *testing.T) {
	start := Metrics(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 3
`)
	end := Metrics(`apiserver_request_total{code="200",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 25
apiserver_request_total{code="409",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 4
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 7
`)
	got, err := APIServerRequests(start, end)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"PATCH nodeclaims/status": 17, "LIST nodes": 1, "POST events": 7}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("APIServerRequests (-want +got):\n%s", diff)
	}
	if _, err := APIServerRequests(start, Metrics("apiserver_request_total{verb=\"GET\" x\n")); err == nil {
		t.Error("APIServerRequests of a broken line: no error")
	}
}
