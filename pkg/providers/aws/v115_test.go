package aws_test

import (
	"context"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestEnclaveOptions: a node class with enclaveOptions.enabled offers only the instance types that support Nitro
// Enclaves and launches them from a launch template with enclaves enabled (Karpenter v1.15).
func TestEnclaveOptions(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	nc := test.EC2NodeClass("default", "dovetail").Alias("al2023@latest").Obj()
	nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true}
	p.resolve(t, nc)
	ctx := context.Background()
	its, err := p.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	if len(its) == 0 {
		t.Fatal("no instance type supports Nitro Enclaves in the catalog")
	}
	for _, it := range its {
		if it.Labels[awsv1.LabelNitroSandbox] != "true" {
			t.Fatalf("%s offered without Nitro Enclaves support", it.Name)
		}
	}
	name := its[0].Name
	if _, err := p.Create(ctx, claim("default-enclave", name)); err != nil {
		t.Fatalf("Create on %s: %v", name, err)
	}
	lts, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(lts.LaunchTemplates) == 0 {
		t.Fatalf("DescribeLaunchTemplates: %v %v", lts, err)
	}
	for _, lt := range lts.LaunchTemplates {
		v, err := p.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: lt.LaunchTemplateId, Versions: []string{"$Latest"}})
		if err != nil || len(v.LaunchTemplateVersions) == 0 {
			t.Fatalf("DescribeLaunchTemplateVersions: %v", err)
		}
		e := v.LaunchTemplateVersions[0].LaunchTemplateData.EnclaveOptions
		if e == nil || !awssdk.ToBool(e.Enabled) {
			t.Errorf("launch template %s without enclaves enabled: %+v", awssdk.ToString(lt.LaunchTemplateName), e)
		}
	}
}

// TestNodeClassReasonsV115: a missing spec.instanceProfile is InstanceProfileNotFound and user data beyond 16 KiB
// UserDataSizeLimitExceeded.
func TestNodeClassReasonsV115(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	ctx := context.Background()
	missing := test.EC2NodeClass("missing", "dovetail").InstanceProfile("no-such-profile").Obj()
	_, err := p.ResolveInstanceProfile(ctx, missing)
	if awsv1.ValidationReason(err) != awsv1.ReasonInstanceProfileNotFound || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("ResolveInstanceProfile(no-such-profile) = %v, want reason %s", err, awsv1.ReasonInstanceProfileNotFound)
	}
	big := test.EC2NodeClass("big", "dovetail").Alias("al2023@latest").UserData("#!/bin/bash\necho " + strings.Repeat("x", awsv1.UserDataSizeLimit) + "\n").Obj()
	if err := p.ValidateNodeClass(ctx, big); awsv1.ValidationReason(err) != awsv1.ReasonUserDataSizeLimitExceeded {
		t.Errorf("ValidateNodeClass(17 KiB user data) = %v, want reason %s", err, awsv1.ReasonUserDataSizeLimitExceeded)
	}
	small := test.EC2NodeClass("small", "dovetail").Alias("al2023@latest").UserData("#!/bin/bash\necho hello\n").Obj()
	if err := p.ValidateNodeClass(ctx, small); err != nil {
		t.Errorf("ValidateNodeClass(small user data) = %v", err)
	}
	kubelet := test.EC2NodeClass("kubelet", "dovetail").Alias("bottlerocket@latest").Obj()
	kubelet.Spec.Kubelet = awsv1.KubeletConfiguration{"serializeImagePulls": awsv1.KubeletValue(false)}
	if err := p.ValidateNodeClass(ctx, kubelet); awsv1.ValidationReason(err) != awsv1.ReasonUnsupportedKubeletConfiguration {
		t.Errorf("ValidateNodeClass(bottlerocket with serializeImagePulls) = %v, want reason %s", err, awsv1.ReasonUnsupportedKubeletConfiguration)
	}
}

// TestKubeletCEL: with AWS_FEATURE_GATES NodeClassCEL=true, a maxPods expression sizes every instance type and
// reaches the node's kubelet configuration; an expression failing on some instance type is
// KubeletExpressionEvaluationFailed; with the gate off, a node class holding one is KubeletExpressionsDisabled.
func TestKubeletCEL(t *testing.T) {
	w := newWorld(t)
	gateOn := func(o *aws.Options) {
		s := *o.Settings
		s.AWSFeatureGates = map[string]bool{settings.AWSFeatureNodeClassCEL: true}
		o.Settings = &s
	}
	p := w.providerWith(t, "uid-a", gateOn)
	ctx := context.Background()
	nc := test.EC2NodeClass("default", "dovetail").Alias("al2023@latest").Obj()
	nc.Spec.Kubelet = awsv1.KubeletConfiguration{"maxPods": awsv1.KubeletValue("min(max_pods, vcpus * 4)"),
		"systemReserved": awsv1.KubeletValue(map[string]string{"memory": "max_pods * 2"})}
	p.resolve(t, nc)
	if err := p.ValidateNodeClass(ctx, nc); err != nil {
		t.Fatalf("ValidateNodeClass: %v", err)
	}
	its, err := p.GetInstanceTypes(ctx, test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	found := false
	for _, it := range its {
		if it.Name == "m5.large" {
			found = true
			if got := it.Capacity.Pods().Value(); got != 8 {
				t.Errorf("m5.large pods = %d, want min(29, 2*4) = 8", got)
			}
			if got := it.Overhead.SystemReserved.Memory().String(); got != "16Mi" {
				t.Errorf("m5.large systemReserved memory = %s, want 16Mi (8 * 2 rounded up to 16)", got)
			}
		}
	}
	if !found {
		t.Fatal("m5.large missing")
	}
	failing := test.EC2NodeClass("failing", "dovetail").Alias("al2023@latest").Obj()
	failing.Spec.Kubelet = awsv1.KubeletConfiguration{"maxPods": awsv1.KubeletValue("vcpus - 4")}
	if err := p.ValidateNodeClass(ctx, failing); awsv1.ValidationReason(err) != awsv1.ReasonKubeletExpressionEvaluationFailed {
		t.Errorf("ValidateNodeClass(vcpus - 4) = %v, want reason %s", err, awsv1.ReasonKubeletExpressionEvaluationFailed)
	}
	off := w.provider(t, "uid-b")
	if err := off.ValidateNodeClass(ctx, nc); awsv1.ValidationReason(err) != awsv1.ReasonKubeletExpressionsDisabled {
		t.Errorf("gate off: ValidateNodeClass = %v, want reason %s", err, awsv1.ReasonKubeletExpressionsDisabled)
	}
}
