package awssim

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

// TestCallLogRecordsMutatingCalls: TerminateInstances and CreateTags are recorded with the caller's app id
// and the instance's tags as they were; Describe calls are not recorded; GET /_awssim/calls serves the log.
func TestCallLogRecordsMutatingCalls(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-log", "x86_64", "")
	id := launchOne(t, e, "lt-log", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	ctx := context.Background()
	if _, err := e.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []ec2types.Tag{{Key: aws.String("owner"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	cfg := e.cfg.Copy()
	cfg.AppID = "cluster-b"
	b := ec2.NewFromConfig(cfg)
	if _, err := b.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("no-such-template")}); err == nil {
		t.Fatal("deleting a missing launch template succeeded")
	}

	resp, err := http.Get(e.srv.URL + "/_awssim/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log CallLog
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		t.Fatal(err)
	}
	type call struct{ Caller, Action, Error, ARN, Owner string }
	var got []call
	for _, r := range log.Records {
		c := call{Caller: r.Caller, Action: r.Action, Error: r.Error}
		for _, res := range r.Resources {
			if res.ARN == "arn:aws:ec2:us-west-2:"+e.sim.accounts["AKIDACCOUNTA"].number+":instance/"+id {
				c.ARN, c.Owner = "instance", res.Tags["owner"]
			}
		}
		got = append(got, c)
	}
	want := []call{
		{Caller: "AKIDACCOUNTA", Action: "CreateLaunchTemplate"},
		{Caller: "AKIDACCOUNTA", Action: "CreateFleet"},
		{Caller: "AKIDACCOUNTA", Action: "CreateTags", ARN: "instance"},
		{Caller: "cluster-b", Action: "TerminateInstances", ARN: "instance", Owner: "a"},
		{Caller: "cluster-b", Action: "DeleteLaunchTemplate", Error: "InvalidLaunchTemplateName.NotFoundException"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("recorded calls (-want +got):\n%s", d)
	}
}
