package aws_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
)

// withoutAction returns the policy with action removed from every statement (statements left with no action go).
func withoutAction(t *testing.T, policy []byte, action string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(policy, &doc); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, s := range doc["Statement"].([]any) {
		st := s.(map[string]any)
		var actions []string
		switch a := st["Action"].(type) {
		case string:
			actions = []string{a}
		case []any:
			for _, x := range a {
				actions = append(actions, x.(string))
			}
		}
		actions = slices.DeleteFunc(actions, func(a string) bool { return a == action })
		if len(actions) == 0 {
			continue
		}
		st["Action"] = actions
		kept = append(kept, st)
	}
	doc["Statement"] = kept
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDryRunLaunchUnderPolicies dry-runs a launch with the default node class against the simulator enforcing
// the documented policy, and the policy without each launch action: the documented policy passes without
// launching anything; each missing action is named by the refusal.
func TestDryRunLaunchUnderPolicies(t *testing.T) {
	policy := readControllerPolicy(t)
	vars := map[string]string{"CLUSTER_UID": "uid-a", "NODE_ROLE_NAME": "KarpenterNodeRole-dovetail"}
	for _, tc := range []struct {
		name   string
		policy []byte
		denied string
	}{
		{"no policy enforced", nil, ""},
		{"documented policy", policy, ""},
		{"without CreateLaunchTemplate", withoutAction(t, policy, "ec2:CreateLaunchTemplate"), "CreateLaunchTemplate"},
		{"without CreateFleet", withoutAction(t, policy, "ec2:CreateFleet"), "CreateFleet"},
		{"without RunInstances", withoutAction(t, policy, "ec2:RunInstances"), "RunInstances"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.provider(t, "uid-a")
			nc := p.resolvedNodeClass(t)
			if tc.policy != nil {
				if err := w.sim.SetIAMPolicy(tc.policy, vars); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			err := p.DryRunLaunch(ctx, nc)
			var denied *instance.DeniedError
			switch {
			case tc.denied == "" && err != nil:
				t.Fatalf("DryRunLaunch = %v, want nil", err)
			case tc.denied != "" && !errors.As(err, &denied):
				t.Fatalf("DryRunLaunch = %v, want ec2:%s denied", err, tc.denied)
			case tc.denied != "" && denied.DeniedAction() != tc.denied:
				t.Fatalf("DryRunLaunch denied %s (%v), want %s", denied.DeniedAction(), err, tc.denied)
			case tc.denied != "" && !strings.HasPrefix(err.Error(), "UnauthorizedOperation: You are not authorized"):
				t.Errorf("DryRunLaunch error %q, want EC2's code and message", err)
			}
			out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Reservations) != 0 {
				t.Errorf("a dry run launched %d reservations", len(out.Reservations))
			}
		})
	}
}

// TestDryRunLaunchOtherClusterDenied: under this cluster's policy, another cluster of the same name (other UID)
// cannot even dry-run a launch.
func TestDryRunLaunchOtherClusterDenied(t *testing.T) {
	w := newWorld(t)
	b := w.provider(t, "uid-b")
	nc := b.resolvedNodeClass(t)
	if err := w.sim.SetIAMPolicy(readControllerPolicy(t), map[string]string{
		"CLUSTER_UID": "uid-a", "NODE_ROLE_NAME": "KarpenterNodeRole-dovetail",
	}); err != nil {
		t.Fatal(err)
	}
	var denied *instance.DeniedError
	if err := b.DryRunLaunch(context.Background(), nc); !errors.As(err, &denied) {
		t.Errorf("DryRunLaunch of cluster b under cluster a's policy = %v, want denied", err)
	}
}
