package awssim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

const authzTestPolicy = `{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Action": ["ec2:Describe*", "ec2:RunInstances", "ec2:CreateLaunchTemplate"], "Resource": "*"},
    {"Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*", "Condition": {"StringEquals": {"ec2:CreateAction": ["RunInstances", "CreateLaunchTemplate"]}}},
    {"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "arn:aws:ec2:${AWS_REGION}:${AWS_ACCOUNT_ID}:instance/*",
     "Condition": {"StringEquals": {"aws:ResourceTag/owner": "${OWNER}"}}},
    {"Effect": "Deny", "Action": "ec2:TerminateInstances", "Resource": "*", "Condition": {"StringEquals": {"aws:ResourceTag/protected": "true"}}},
    {"Effect": "Allow", "Action": "iam:CreateInstanceProfile", "Resource": "*", "Condition": {"StringEquals": {"aws:RequestTag/owner": "${OWNER}"}}},
    {"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": "arn:aws:ssm:${AWS_REGION}::parameter/aws/service/*"},
    {"Effect": "Allow", "Action": "eks:DescribeCluster", "Resource": "arn:aws:eks:*:*:cluster/another"}
  ]
}`

// apiCode returns the AWS error code and HTTP status of an SDK error.
func apiCode(t *testing.T, err error) (string, int) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v is not an AWS API error", err)
	}
	status := 0
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	return apiErr.ErrorCode(), status
}

func TestIAMPolicyEnforcedOnTheWire(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.IAMPolicy = []byte(authzTestPolicy)
		o.IAMPolicyVars = map[string]string{"OWNER": "me"}
	})
	ctx := context.Background()
	e.launchTemplate(t, "lt-authz", "x86_64", "")
	launch := func(tags map[string]string) string {
		t.Helper()
		var ts []ec2types.Tag
		for k, v := range tags {
			ts = append(ts, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		out, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-authz")},
			InstanceType:   ec2types.InstanceTypeC5Large, SubnetId: aws.String(e.subnetIDs(t)["us-west-2a"]),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: ts}}})
		if err != nil {
			t.Fatalf("RunInstances: %v", err)
		}
		return aws.ToString(out.Instances[0].InstanceId)
	}
	mine, theirs, protected := launch(map[string]string{"owner": "me"}), launch(map[string]string{"owner": "them"}),
		launch(map[string]string{"owner": "me", "protected": "true"})

	if _, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{mine}}); err != nil {
		t.Errorf("terminating an instance the policy allows: %v", err)
	}
	for name, id := range map[string]string{"other owner": theirs, "explicit deny": protected} {
		_, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err == nil {
			t.Errorf("%s: TerminateInstances(%s) allowed", name, id)
			continue
		}
		code, status := apiCode(t, err)
		if code != "UnauthorizedOperation" || status != http.StatusForbidden {
			t.Errorf("%s: got %s (HTTP %d), want UnauthorizedOperation (HTTP 403)", name, code, status)
		}
		msg := err.Error()
		_, encoded, ok := strings.Cut(msg, "Encoded authorization failure message: ")
		if !ok || !strings.Contains(msg, "ec2:TerminateInstances on resource: arn:aws:ec2:us-west-2:") {
			t.Errorf("%s: message %q does not name the action, resource and encoded message", name, msg)
			continue
		}
		var decoded struct {
			Allowed      bool `json:"allowed"`
			ExplicitDeny bool `json:"explicitDeny"`
		}
		raw, derr := base64.RawURLEncoding.DecodeString(strings.TrimSpace(encoded))
		if derr != nil || json.Unmarshal(raw, &decoded) != nil || decoded.Allowed || decoded.ExplicitDeny != (name == "explicit deny") {
			t.Errorf("%s: encoded message %q decodes to %+v (%v)", name, encoded, decoded, derr)
		}
	}
	// A multi-instance call is denied whole when one instance is not allowed.
	if _, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{mine, theirs}}); err == nil {
		t.Errorf("terminating an allowed and a denied instance together was allowed")
	}
	if out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{theirs}}); err != nil ||
		out.Reservations[0].Instances[0].State.Name != ec2types.InstanceStateNameRunning &&
			out.Reservations[0].Instances[0].State.Name != ec2types.InstanceStateNamePending {
		t.Errorf("the denied instance was touched: %v", err)
	}

	denied := []struct {
		name, code string
		call       func() error
	}{
		{"iam create without the owner tag", "AccessDenied", func() error {
			_, err := e.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p1"),
				Tags: []iamtypes.Tag{{Key: aws.String("owner"), Value: aws.String("them")}}})
			return err
		}},
		{"ssm parameter outside /aws/service", "AccessDeniedException", func() error {
			_, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/private/secret")})
			return err
		}},
		{"sqs without any statement", "AccessDenied", func() error {
			_, err := e.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("dovetail")})
			return err
		}},
		{"eks other cluster", "AccessDeniedException", func() error {
			_, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dovetail")})
			return err
		}},
	}
	for _, tc := range denied {
		err := tc.call()
		if err == nil {
			t.Errorf("%s: allowed", tc.name)
			continue
		}
		if code, status := apiCode(t, err); code != tc.code || status != http.StatusForbidden {
			t.Errorf("%s: got %s (HTTP %d), want %s (HTTP 403): %v", tc.name, code, status, tc.code, err)
		}
	}
	if _, err := e.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p2"),
		Tags: []iamtypes.Tag{{Key: aws.String("owner"), Value: aws.String("me")}}}); err != nil {
		t.Errorf("iam create with the owner tag: %v", err)
	}
}

func TestIAMPolicySuspendThroughAdminAPI(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.IAMPolicy = []byte(authzTestPolicy)
		o.IAMPolicyVars = map[string]string{"OWNER": "me"}
	})
	ctx := context.Background()
	getSecret := func() string {
		_, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/private/secret")})
		code, _ := apiCode(t, err)
		return code
	}
	admin := func(action string) IAMPolicyState {
		resp, err := http.Post(e.srv.URL+"/_awssim/iam-policy/"+action, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st IAMPolicyState
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("admin %s: HTTP %d, %v", action, resp.StatusCode, err)
		}
		return st
	}
	if got := getSecret(); got != "AccessDeniedException" {
		t.Errorf("enforced: %s", got)
	}
	if st := admin("suspend"); st.Enforced || !st.Suspended || st.Digest == "" {
		t.Errorf("after suspend: %+v", st)
	}
	if got := getSecret(); got != "ParameterNotFound" {
		t.Errorf("suspended: %s, want ParameterNotFound", got)
	}
	if st := admin("resume"); !st.Enforced || st.Suspended {
		t.Errorf("after resume: %+v", st)
	}
	if got := getSecret(); got != "AccessDeniedException" {
		t.Errorf("resumed: %s", got)
	}
}

func TestIAMPolicyTemplateErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown placeholder": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"${NOPE}"}]}`,
		"bad json":            `{"Version":"2012-10-17","Statement":[`,
	} {
		if _, err := New(Options{IAMPolicy: []byte(doc)}); err == nil {
			t.Errorf("%s: New accepted the policy", name)
		}
	}
}

// TestIAMDeniedActionsThroughAdminAPI: actions put on the denied list are refused to every caller, with no policy
// enforced, as an explicit deny (dry runs included), until the list is cleared.
func TestIAMDeniedActionsThroughAdminAPI(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := func(method, body string) IAMPolicyState {
		req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+"/_awssim/iam-policy/denied", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st IAMPolicyState
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("admin %s denied: HTTP %d, %v", method, resp.StatusCode, err)
		}
		return st
	}
	dryRun := func() string {
		_, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			InstanceType: ec2types.InstanceTypeM5Large, ImageId: aws.String("ami-00000000000000001")})
		code, _ := apiCode(t, err)
		return code
	}
	if got := dryRun(); got != "DryRunOperation" {
		t.Errorf("no policy: dry-run RunInstances = %s, want DryRunOperation", got)
	}
	if st := admin(http.MethodPut, `{"actions": ["ec2:RunInstances"]}`); st.Enforced || len(st.Denied) != 1 || st.Denied[0] != "ec2:runinstances" {
		t.Errorf("after PUT denied: %+v", st)
	}
	_, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		InstanceType: ec2types.InstanceTypeM5Large, ImageId: aws.String("ami-00000000000000001")})
	if code, status := apiCode(t, err); code != "UnauthorizedOperation" || status != http.StatusForbidden ||
		!strings.Contains(err.Error(), "explicit deny") {
		t.Errorf("denied: dry-run RunInstances = %s (HTTP %d, %v), want UnauthorizedOperation with an explicit deny", code, status, err)
	}
	if _, err := e.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("DescribeSubnets while RunInstances is denied: %v", err)
	}
	if st := admin(http.MethodDelete, ""); len(st.Denied) != 0 {
		t.Errorf("after DELETE denied: %+v", st)
	}
	if got := dryRun(); got != "DryRunOperation" {
		t.Errorf("cleared: dry-run RunInstances = %s, want DryRunOperation", got)
	}
}
