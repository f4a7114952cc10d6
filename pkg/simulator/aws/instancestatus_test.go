package awssim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestInstanceStatusAdminRoute: POST instances/{id}/status sets an impairment and an event that DescribeInstanceStatus
// filters see; an empty body makes the instance healthy again; bad values and unknown instances are refused.
func TestInstanceStatusAdminRoute(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-status", "x86_64", "")
	out, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(2), MaxCount: aws.Int32(2),
		LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-status")},
		InstanceType:   ec2types.InstanceTypeC5Large, SubnetId: aws.String(e.subnetIDs(t)["us-west-2b"])})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	// Pending instances are not listed without IncludeAllInstances, and are initializing with it.
	st, err := e.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true)})
	if err != nil || len(st.InstanceStatuses) != 2 || st.InstanceStatuses[0].InstanceStatus.Status != ec2types.SummaryStatusInitializing {
		t.Fatalf("pending instances: %+v, %v", st, err)
	}
	e.advance(10 * time.Second)
	post := func(body string) int {
		t.Helper()
		resp, err := http.Post(e.srv.URL+"/_awssim/instances/"+id+"/status", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"instanceStatus": "impaired", "events": [{"code": "system-reboot"}]}`); code != http.StatusOK {
		t.Fatalf("POST status = %d", code)
	}
	for _, f := range []ec2types.Filter{
		{Name: aws.String("instance-status.status"), Values: []string{"impaired"}},
		{Name: aws.String("instance-status.reachability"), Values: []string{"failed"}},
		{Name: aws.String("event.code"), Values: []string{"system-reboot"}},
	} {
		st, err := e.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: []ec2types.Filter{f}})
		if err != nil || len(st.InstanceStatuses) != 1 || aws.ToString(st.InstanceStatuses[0].InstanceId) != id {
			t.Errorf("filter %s: %+v, %v", *f.Name, st, err)
		}
	}
	if code := post(`{}`); code != http.StatusOK {
		t.Fatalf("POST {} = %d", code)
	}
	st, err = e.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: []ec2types.Filter{
		{Name: aws.String("instance-status.status"), Values: []string{"impaired"}}}})
	if err != nil || len(st.InstanceStatuses) != 0 {
		t.Errorf("after recovery: %+v, %v", st, err)
	}
	for _, body := range []string{`{"instanceStatus": "broken"}`, `{"events": [{"code": "reboot-please"}]}`, `{"unknown": 1}`} {
		if code := post(body); code != http.StatusBadRequest {
			t.Errorf("POST %s = %d, want 400", body, code)
		}
	}
	if err := e.sim.SetInstanceStatus("i-missing", InstanceStatusRequest{}); err == nil {
		t.Error("an unknown instance was accepted")
	}
}
