package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestServeAndClientCommands(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		cmd := newRootCommand()
		cmd.SetArgs([]string{"serve", "--listen", addr, "--log-level", "error", "--pending-duration", "50ms"})
		done <- cmd.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	endpoint := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/_awssim/faults")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The SDK finds the simulator through the environment, as the controller does.
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "123456789012")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "x")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	cfg, err := sdk.LoadConfig(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	azs, err := ec2.NewFromConfig(cfg).DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
	if err != nil || len(azs.AvailabilityZones) != 3 {
		t.Fatalf("zones = %+v, %v", azs, err)
	}
	// A refused mutating call, for the call log.
	_, _ = ec2.NewFromConfig(cfg).TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-nope"}})
	q, err := sqs.NewFromConfig(cfg).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("dovetail")})
	if err != nil || !strings.HasPrefix(aws.ToString(q.QueueUrl), endpoint+"/123456789012/") {
		t.Fatalf("queue url = %+v, %v", q, err)
	}

	tests := []struct {
		args    []string
		want    string
		wantErr string
		// absent must not be in the output.
		absent string
	}{
		{args: []string{"fault", "capacity", "--type", "m5.large", "--zone", "us-west-2a", "--capacity-type", "spot"}, want: `"instanceType": "m5.large"`},
		{args: []string{"fault", "capacity", "--capacity-type", "reserved"}, wantErr: "--capacity-type"},
		{args: []string{"fault", "throttle", "--rate", "0.2"}, want: `"rate": 0.2`},
		{args: []string{"fault", "throttle", "--rate", "3"}, wantErr: "between 0 and 1"},
		{args: []string{"fault", "latency", "200ms"}, want: `"latency": "200ms"`},
		{args: []string{"fault", "no-node", "--nodepool", "broken", "--count", "2", "--tag", "team=*"},
			want: `"nodePool": "broken",
      "tags": {
        "team": "*"
      },
      "count": 2`},
		{args: []string{"fault", "no-node", "--count", "-1"}, wantErr: "must not be negative"},
		{args: []string{"fault", "no-node", "--tag", "team"}, wantErr: "key=value"},
		{args: []string{"fault", "no-node", "--clear"}, want: `"capacity"`, absent: "noNode"},
		{args: []string{"fault", "clear"}, want: `"latency": "0s"`},
		{args: []string{"instances"}, want: "INSTANCE"},
		{args: []string{"terminate", "i-nope"}, wantErr: "not found"},
		{args: []string{"sqs", "send", "meteor", "--instance", "i-1"}, wantErr: "event kind"},
		{args: []string{"sqs", "send", "rebalance"}, wantErr: "--instance is required"},
		{args: []string{"state"}, want: `"cluster": "dovetail"`},
		{args: []string{"calls"}, want: "123456789012  ec2:TerminateInstances"},
		{args: []string{"calls", "--caller", "someone-else"}, want: "SEQ", absent: "TerminateInstances"},
		{args: []string{"calls", "--json"}, want: `"records"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := run(t, append(tc.args, "--endpoint", endpoint)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out, tc.want) {
				t.Fatalf("out = %q, err = %v; want %q", out, err, tc.want)
			}
			if tc.absent != "" && strings.Contains(out, tc.absent) {
				t.Fatalf("out = %q; want no %q", out, tc.absent)
			}
		})
	}
}

func TestBadServeFlags(t *testing.T) {
	tests := [][]string{
		{"serve", "--pending-duration", "-1s"},
		{"serve", "--uninitialized-taint-delay", "3s-1s"},
		{"serve", "--log-level", "loud"},
		{"serve", "--kube-qps", "0"},
		{"serve", "--kube-burst", "0"},
		{"serve", "--region", "mars-1"},
		{"serve", "--listen", "nonsense"},
		{"serve", "--kubernetes-version", "v2"},
		{"serve", "--other-cluster-kubeconfig", "/nonexistent"},
		{"serve", "--dra-drivers", "amd.com/gpu"},
		{"serve", "--dra-device-models", "/nonexistent"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if _, err := run(t, args...); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
