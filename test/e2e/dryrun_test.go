//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// simDenied sets (PUT, body) or clears (DELETE) the actions awssim refuses to every caller.
func simDenied(ctx context.Context, t *testing.T, method, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, env.AWSEndpoint+"/_awssim/iam-policy/denied", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s iam-policy/denied: HTTP %d", method, resp.StatusCode)
	}
}

// validation returns the EC2NodeClass's ValidationSucceeded and Ready conditions as "status/reason".
func validation(ctx context.Context, name string) (string, string, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return "", "", err
	}
	show := func(t string) string {
		c := meta.FindStatusCondition(nc.Status.Conditions, t)
		if c == nil {
			return "absent"
		}
		return string(c.Status) + "/" + c.Reason
	}
	return show(awsv1.ConditionTypeValidationSucceeded), show(karpv1.ConditionTypeReady), nil
}

// TestEC2NodeClassDryRunShowsMissingPermission: with ec2:RunInstances taken away from the controller, a new
// EC2NodeClass shows ValidationSucceeded=False, reason RunInstancesAuthCheckFailed, and is not Ready, before any
// launch (its NodePool has no NodeClaim). Once the permission is back and the node class changes (the
// outcome is otherwise kept 30 minutes, as Karpenter keeps it), it becomes Ready.
func TestEC2NodeClassDryRunShowsMissingPermission(t *testing.T) {
	ctx := context.Background()
	const name = "dryrun"
	simDenied(ctx, t, http.MethodPut, `{"actions": ["ec2:RunInstances"]}`)
	t.Cleanup(func() { simDenied(ctx, t, http.MethodDelete, "") })
	setupPool(t, name, framework.PoolOptions{})

	err := framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		v, ready, err := validation(ctx, name)
		return v == "False/RunInstancesAuthCheckFailed" && strings.HasPrefix(ready, "False/"),
			fmt.Sprintf("ValidationSucceeded %s, Ready %s", v, ready), err
	})
	if err != nil {
		t.Fatalf("EC2NodeClass %s without ec2:RunInstances: %v", name, err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	msg := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded).Message
	if !strings.Contains(msg, "ec2:RunInstances") || !strings.Contains(msg, "UnauthorizedOperation") {
		t.Errorf("ValidationSucceeded message %q does not name ec2:RunInstances and UnauthorizedOperation", msg)
	}
	if claims, err := env.NodeClaims(ctx, name); err != nil || len(claims) != 0 {
		t.Errorf("NodeClaims of pool %s: %d, %v; want none", name, len(claims), err)
	}

	simDenied(ctx, t, http.MethodDelete, "")
	orig := nc.DeepCopy()
	if nc.Spec.Tags == nil {
		nc.Spec.Tags = map[string]string{}
	}
	nc.Spec.Tags["dryrun"] = "again"
	if err := env.Client.Patch(ctx, nc, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		v, ready, err := validation(ctx, name)
		return v == "True/"+karpv1.ReasonValidationSucceeded && strings.HasPrefix(ready, "True/"),
			fmt.Sprintf("ValidationSucceeded %s, Ready %s", v, ready), err
	})
	if err != nil {
		t.Fatalf("EC2NodeClass %s with the permission back and a changed spec: %v", name, err)
	}
	fmt.Printf("dryrun: EC2NodeClass %s refused without ec2:RunInstances (%s), Ready once allowed\n", name, msg)
}
