package awssim

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
)

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RebootInstances answers on the EC2 query protocol (through aws-sdk-go-v2); the instance's Node goes NotReady
// for Timing.Reboot and comes back Ready with a new boot ID, unless a reboot-hang fault matches.
func TestRebootInstances(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang *RebootHangFault
		back bool
	}{
		{"reboot", nil, true},
		{"hang fault of the pool", &RebootHangFault{NodePool: "gpu", Count: 1}, false},
		{"hang fault of another pool", &RebootHangFault{NodePool: "other"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.Timing.Reboot = 10 * time.Second })
			ctx := context.Background()
			e.launchTemplate(t, "lt-nonode", "x86_64", "")
			id := launchInPool(t, e, "gpu")
			e.advance(5 * time.Second)
			e.advance(2 * time.Second)
			inst := instanceByID(t, e, id)
			name := inst.NodeName
			n := e.sink.node(name)
			if n == nil {
				t.Fatalf("no Node for %s", id)
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			e.sink.mu.Lock()
			e.sink.nodes[name] = n
			e.sink.mu.Unlock()
			before := n.Status.NodeInfo.BootID
			if before == "" {
				t.Fatal("the Node has no boot ID")
			}
			if tc.hang != nil {
				if code, body := adminDo(t, e, "POST", "faults/reboot-hang", tc.hang); code != http.StatusOK {
					t.Fatalf("POST faults/reboot-hang: %d %s", code, body)
				}
			}
			out, err := e.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}})
			if err != nil || out == nil {
				t.Fatalf("RebootInstances: %v", err)
			}
			e.advance(time.Second)
			if n := e.sink.node(name); nodeReady(n) {
				t.Errorf("the Node is Ready right after the reboot call")
			}
			e.advance(11 * time.Second)
			e.advance(time.Second)
			n = e.sink.node(name)
			if nodeReady(n) != tc.back {
				t.Errorf("Node Ready after the reboot time: %v, want %v", nodeReady(n), tc.back)
			}
			if changed := n.Status.NodeInfo.BootID != before; changed != tc.back {
				t.Errorf("boot ID %q -> %q: changed %v, want %v", before, n.Status.NodeInfo.BootID, changed, tc.back)
			}
			if got := instanceByID(t, e, id).State; got != StateRunning {
				t.Errorf("instance %s after a reboot, want running", got)
			}
		})
	}
}

func TestRebootInstancesErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	if code, status := apiCode(t, err); code != "InvalidInstanceID.NotFound" || status != http.StatusBadRequest {
		t.Errorf("unknown instance: %s (HTTP %d), want InvalidInstanceID.NotFound (400)", code, status)
	}
	e.launchTemplate(t, "lt-nonode", "x86_64", "")
	id := launchInPool(t, e, "gpu")
	e.advance(5 * time.Second)
	if _, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}})
	if code, _ := apiCode(t, err); code != "IncorrectInstanceState" {
		t.Errorf("shutting-down instance: %s, want IncorrectInstanceState", code)
	}
}

// The IAM policy governs RebootInstances per instance, like TerminateInstances.
func TestRebootInstancesIAM(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.IAMPolicy = []byte(`{"Version": "2012-10-17", "Statement": [
  {"Effect": "Allow", "Action": ["ec2:Describe*", "ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate", "ec2:CreateTags", "ssm:GetParameter"], "Resource": "*"},
  {"Effect": "Allow", "Action": "ec2:RebootInstances", "Resource": "*", "Condition": {"StringEquals": {"aws:ResourceTag/karpenter.sh/nodepool": "gpu"}}}]}`)
	})
	ctx := context.Background()
	e.launchTemplate(t, "lt-nonode", "x86_64", "")
	allowed, denied := launchInPool(t, e, "gpu"), launchInPool(t, e, "cpu")
	e.advance(5 * time.Second)
	if _, err := e.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{allowed}}); err != nil {
		t.Errorf("allowed reboot: %v", err)
	}
	_, err := e.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{denied}})
	if code, status := apiCode(t, err); code != "UnauthorizedOperation" || status != http.StatusForbidden {
		t.Errorf("denied reboot: %s (HTTP %d), want UnauthorizedOperation (403)", code, status)
	}
}
