package iampolicy

import (
	"strings"
	"testing"
)

const testPolicy = `{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "Read", "Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"},
    {"Sid": "Terminate", "Effect": "Allow", "Action": ["ec2:TerminateInstances"],
     "Resource": "arn:aws:ec2:us-west-2:*:instance/*",
     "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/c1": "owned", "aws:ResourceTag/dovetail.sh/cluster-uid": "u1"}}},
    {"Sid": "Create", "Effect": "Allow", "Action": "ec2:CreateLaunchTemplate", "Resource": "*",
     "Condition": {"StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}, "StringEquals": {"aws:RequestTag/kubernetes.io/cluster/c1": "owned"}}},
    {"Sid": "Retag", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
     "Condition": {"ForAllValues:StringEquals": {"aws:TagKeys": ["Name", "karpenter.sh/nodeclaim"]}}},
    {"Sid": "AnyKey", "Effect": "Allow", "Action": "ec2:DeleteTags", "Resource": "*",
     "Condition": {"ForAnyValue:StringLike": {"aws:TagKeys": ["team/*"]}}},
    {"Sid": "NotOther", "Effect": "Allow", "Action": "iam:GetInstanceProfile", "Resource": "arn:aws:iam::*:instance-profile/c1_?",
     "Condition": {"StringNotEquals": {"aws:ResourceTag/dovetail.sh/cluster-uid": "u2"}}},
    {"Sid": "NoProd", "Effect": "Deny", "Action": "ec2:*", "Resource": "*",
     "Condition": {"StringEquals": {"aws:ResourceTag/env": "prod"}}}
  ]
}`

func TestEvaluate(t *testing.T) {
	p, err := Parse([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	inst := "arn:aws:ec2:us-west-2:123456789012:instance/i-1"
	owned := map[string][]string{"aws:ResourceTag/kubernetes.io/cluster/c1": {"owned"}, "aws:ResourceTag/dovetail.sh/cluster-uid": {"u1"}}
	cases := []struct {
		name string
		req  Request
		want Decision
	}{
		{"wildcard action", Request{Action: "ec2:DescribeInstances", Resource: "*"}, Allowed},
		{"action is case-insensitive", Request{Action: "EC2:describeinstances", Resource: "*"}, Allowed},
		{"no statement", Request{Action: "ec2:RunInstances", Resource: "*"}, ImplicitDeny},
		{"other service", Request{Action: "sqs:DescribeInstances", Resource: "*"}, ImplicitDeny},
		{"terminate owned", Request{Action: "ec2:TerminateInstances", Resource: inst, Context: owned}, Allowed},
		{"terminate other uid", Request{Action: "ec2:TerminateInstances", Resource: inst, Context: map[string][]string{
			"aws:ResourceTag/kubernetes.io/cluster/c1": {"owned"}, "aws:ResourceTag/dovetail.sh/cluster-uid": {"u2"}}}, ImplicitDeny},
		{"terminate untagged", Request{Action: "ec2:TerminateInstances", Resource: inst}, ImplicitDeny},
		{"terminate other region", Request{Action: "ec2:TerminateInstances", Resource: "arn:aws:ec2:eu-west-1:1:instance/i-1", Context: owned}, ImplicitDeny},
		{"context keys are case-insensitive", Request{Action: "ec2:TerminateInstances", Resource: inst, Context: map[string][]string{
			"AWS:RESOURCETAG/kubernetes.io/cluster/c1": {"owned"}, "aws:resourcetag/dovetail.sh/cluster-uid": {"u1"}}}, Allowed},
		{"explicit deny wins", Request{Action: "ec2:TerminateInstances", Resource: inst, Context: map[string][]string{
			"aws:ResourceTag/kubernetes.io/cluster/c1": {"owned"}, "aws:ResourceTag/dovetail.sh/cluster-uid": {"u1"}, "aws:ResourceTag/env": {"prod"}}}, ExplicitDeny},
		{"request tags all present", Request{Action: "ec2:CreateLaunchTemplate", Resource: "x", Context: map[string][]string{
			"aws:RequestTag/kubernetes.io/cluster/c1": {"owned"}, "aws:RequestTag/karpenter.sh/nodepool": {"default"}}}, Allowed},
		{"request tag missing fails StringLike *", Request{Action: "ec2:CreateLaunchTemplate", Resource: "x", Context: map[string][]string{
			"aws:RequestTag/kubernetes.io/cluster/c1": {"owned"}}}, ImplicitDeny},
		{"request tag wrong value", Request{Action: "ec2:CreateLaunchTemplate", Resource: "x", Context: map[string][]string{
			"aws:RequestTag/kubernetes.io/cluster/c1": {"shared"}, "aws:RequestTag/karpenter.sh/nodepool": {"default"}}}, ImplicitDeny},
		{"ForAllValues subset", Request{Action: "ec2:CreateTags", Resource: "x", Context: map[string][]string{"aws:TagKeys": {"Name"}}}, Allowed},
		{"ForAllValues extra key", Request{Action: "ec2:CreateTags", Resource: "x", Context: map[string][]string{"aws:TagKeys": {"Name", "dovetail.sh/cluster-uid"}}}, ImplicitDeny},
		{"ForAllValues absent key holds", Request{Action: "ec2:CreateTags", Resource: "x"}, Allowed},
		{"ForAnyValue one matches", Request{Action: "ec2:DeleteTags", Resource: "x", Context: map[string][]string{"aws:TagKeys": {"a", "team/x"}}}, Allowed},
		{"ForAnyValue none", Request{Action: "ec2:DeleteTags", Resource: "x", Context: map[string][]string{"aws:TagKeys": {"a"}}}, ImplicitDeny},
		{"ForAnyValue absent", Request{Action: "ec2:DeleteTags", Resource: "x"}, ImplicitDeny},
		{"? wildcard and negated operator on absent key", Request{Action: "iam:GetInstanceProfile", Resource: "arn:aws:iam::1:instance-profile/c1_a"}, Allowed},
		{"? matches exactly one", Request{Action: "iam:GetInstanceProfile", Resource: "arn:aws:iam::1:instance-profile/c1_ab"}, ImplicitDeny},
		{"negated operator on other value", Request{Action: "iam:GetInstanceProfile", Resource: "arn:aws:iam::1:instance-profile/c1_a",
			Context: map[string][]string{"aws:ResourceTag/dovetail.sh/cluster-uid": {"u2"}}}, ImplicitDeny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Evaluate(tc.req); got != tc.want {
				t.Errorf("Evaluate(%+v) = %v, want %v", tc.req, got, tc.want)
			}
		})
	}
}

func TestWildcardMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abcd", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"*b*", "abc", true}, {"arn:*:instance/*", "arn:aws:ec2:r:1:instance/i-1", true},
		{"arn:*:instance/*", "arn:aws:ec2:r:1:volume/v-1", false}, {"", "", true}, {"", "a", false},
	}
	for _, tc := range cases {
		if got := wildcardMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"version":     `{"Version":"2008-10-17","Statement":[]}`,
		"effect":      `{"Version":"2012-10-17","Statement":[{"Effect":"Maybe","Action":"a:b","Resource":"*"}]}`,
		"NotAction":   `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","NotAction":"a:b","Resource":"*"}]}`,
		"operator":    `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"a:b","Resource":"*","Condition":{"NumericEquals":{"k":"1"}}}]}`,
		"qualifier":   `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"a:b","Resource":"*","Condition":{"ForSome:StringEquals":{"k":"1"}}}]}`,
		"no resource": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"a:b"}]}`,
		"action":      `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"TerminateInstances","Resource":"*"}]}`,
	}
	for name, doc := range cases {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: Parse accepted %s", name, doc)
		}
	}
	if _, err := Parse([]byte(`{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"a:b","Resource":"*"}}`)); err != nil {
		t.Errorf("single statement object: %v", err)
	}
}

func TestRender(t *testing.T) {
	out, err := Render([]byte(`{"a":"${X}/${Y}/${X}"}`), map[string]string{"X": "1", "Y": "2"})
	if err != nil || string(out) != `{"a":"1/2/1"}` {
		t.Errorf("Render = %s, %v", out, err)
	}
	_, err = Render([]byte(`${X}${Z}${Z}`), map[string]string{"X": "1"})
	if err == nil || !strings.Contains(err.Error(), "Z") || strings.Contains(err.Error(), "Z, Z") {
		t.Errorf("Render missing = %v, want an error naming Z once", err)
	}
}
