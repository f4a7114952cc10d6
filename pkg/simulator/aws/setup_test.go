package awssim

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/google/go-cmp/cmp"
)

// TestSetupServices: STS, IAM policy simulation, the queue policy and the EventBridge rules answer the real SDK
// clients, healthy and with each setup fault (set through the admin API, as the e2e tests do).
func TestSetupServices(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stsc, events := sts.NewFromConfig(e.cfg), eventbridge.NewFromConfig(e.cfg)

	id, err := stsc.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	acct := accountNumber("AKIDACCOUNTA")
	if aws.ToString(id.Account) != acct || !strings.HasPrefix(aws.ToString(id.Arn), "arn:aws:sts::"+acct+":assumed-role/") {
		t.Errorf("identity %s %s", aws.ToString(id.Account), aws.ToString(id.Arn))
	}
	decisions := func() map[string]string {
		out, err := e.iam.SimulatePrincipalPolicy(ctx, &iam.SimulatePrincipalPolicyInput{
			PolicySourceArn: aws.String("arn:aws:iam::" + acct + ":role/DovetailController"),
			ActionNames:     []string{"ec2:CreateFleet", "iam:PassRole", "sqs:ReceiveMessage"},
		})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range out.EvaluationResults {
			m[aws.ToString(r.EvalActionName)] = string(r.EvalDecision)
		}
		return m
	}
	if diff := cmp.Diff(map[string]string{"ec2:CreateFleet": "allowed", "iam:PassRole": "allowed", "sqs:ReceiveMessage": "allowed"}, decisions()); diff != "" {
		t.Errorf("healthy decisions (-want +got):\n%s", diff)
	}
	queues, err := e.sqs.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(queues.QueueUrls) != 1 {
		t.Fatalf("ListQueues: %v %v", queues, err)
	}
	policy := func() string {
		a, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queues.QueueUrls[0]),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		return a.Attributes["Policy"]
	}
	if !strings.Contains(policy(), "events.amazonaws.com") {
		t.Errorf("healthy queue policy %s", policy())
	}
	rules := func() []string {
		out, err := events.ListRules(ctx, &eventbridge.ListRulesInput{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range out.Rules {
			names = append(names, aws.ToString(r.Name))
			tg, err := events.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: r.Name})
			if err != nil || len(tg.Targets) != 1 || !strings.HasSuffix(aws.ToString(tg.Targets[0].Arn), ":"+acct+":dovetail") {
				t.Errorf("targets of %s: %+v %v", aws.ToString(r.Name), tg, err)
			}
		}
		return names
	}
	if diff := cmp.Diff([]string{"dovetail-InstanceStateChange", "dovetail-Rebalance", "dovetail-ScheduledChange", "dovetail-SpotInterruption"}, rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}

	body := `{"identityError":"ExpiredToken","deniedActions":["iam:*"],"queuePolicyMissing":true,"missingEventRules":["Spot*","Rebalance"]}`
	resp, err := http.Post(e.srv.URL+"/_awssim/faults/setup", "application/json", bytes.NewBufferString(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST faults/setup: %v %v", resp, err)
	}
	resp.Body.Close()
	_, err = stsc.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	assertCode(t, err, "ExpiredToken")
	if diff := cmp.Diff(map[string]string{"ec2:CreateFleet": "allowed", "iam:PassRole": "implicitDeny", "sqs:ReceiveMessage": "allowed"}, decisions()); diff != "" {
		t.Errorf("faulted decisions (-want +got):\n%s", diff)
	}
	if strings.Contains(policy(), "events.amazonaws.com") {
		t.Errorf("faulted queue policy still allows EventBridge: %s", policy())
	}
	if diff := cmp.Diff([]string{"dovetail-InstanceStateChange", "dovetail-ScheduledChange"}, rules()); diff != "" {
		t.Errorf("faulted rules (-want +got):\n%s", diff)
	}
	_, err = events.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("dovetail-Rebalance")})
	assertCode(t, err, "ResourceNotFoundException")
}
