package resolve

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

func TestAliasParameters(t *testing.T) {
	cases := []struct {
		alias   string
		want    []string
		wantErr string
	}{
		{alias: "al2023@latest", want: []string{
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron/recommended/image_id",
		}},
		{alias: "al2023@v20240807", want: []string{
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20240807/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.34-v20240807/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.34-v20240807/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.34-v20240807/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.34-v20240807/image_id",
		}},
		{alias: "al2@latest", want: []string{
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2-arm64/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2-gpu/recommended/image_id",
		}},
		{alias: "bottlerocket@v1.20.1", want: []string{
			"/aws/service/bottlerocket/aws-k8s-1.34/x86_64/1.20.1/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.34/arm64/1.20.1/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/1.20.1/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/1.20.1/image_id",
		}},
		{alias: "windows2022@latest", want: []string{"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.34/image_id"}},
		{alias: "windows2025@latest", want: []string{"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.34/image_id"}},
		{alias: "bottlerocket@1.10.0", want: []string{
			"/aws/service/bottlerocket/aws-k8s-1.34/x86_64/1.10.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.34/arm64/1.10.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/1.10.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/1.10.0/image_id",
		}},
		{alias: "windows2022@v1", wantErr: "only @latest"},
		{alias: "windows2025@v1", wantErr: "only @latest"},
		{alias: "ubuntu@latest", wantErr: "unknown family"},
		{alias: "al2023", wantErr: "not family@version"},
	}
	for _, tc := range cases {
		t.Run(tc.alias, func(t *testing.T) {
			params, err := AliasParameters(tc.alias, "1.34")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range params {
				got = append(got, p.Path)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("paths (-want +got):\n%s", d)
			}
		})
	}
	if _, err := AliasParameters("al2023@latest", ""); err == nil {
		t.Errorf("alias without a Kubernetes version resolved")
	}
}

func TestNewestPerRequirements(t *testing.T) {
	amd := []corev1.NodeSelectorRequirement{archReq("amd64")}
	arm := []corev1.NodeSelectorRequirement{archReq("arm64")}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	img := func(id string, reqs []corev1.NodeSelectorRequirement, age int, deprecated bool) image {
		return image{ami: awsv1.AMI{ID: id, Requirements: reqs, Deprecated: deprecated}, created: t0.AddDate(0, 0, -age)}
	}
	got := newestPerRequirements([]image{
		img("ami-old", amd, 10, false), img("ami-newest-deprecated", amd, 0, true), img("ami-new", amd, 1, false),
		img("ami-arm-deprecated", arm, 0, true),
	})
	var ids []string
	for _, a := range got {
		ids = append(ids, a.ID)
	}
	if d := cmp.Diff([]string{"ami-new", "ami-arm-deprecated"}, ids); d != "" {
		t.Errorf("chosen AMIs (-want +got):\n%s", d)
	}
}

func TestInstanceProfileName(t *testing.T) {
	a := InstanceProfileName(tags.Cluster{Name: "demo", UID: "u1"}, "us-west-2", "default")
	b := InstanceProfileName(tags.Cluster{Name: "demo", UID: "u2"}, "us-west-2", "default")
	if a == b || !strings.HasPrefix(a, "demo_") {
		t.Errorf("names %q and %q: want distinct names starting with the cluster name", a, b)
	}
	long := InstanceProfileName(tags.Cluster{Name: strings.Repeat("x", 200), UID: "u"}, "r", "n")
	if len(long) != maxInstanceProfileName {
		t.Errorf("long name has %d characters, want %d", len(long), maxInstanceProfileName)
	}
	for in, want := range map[string]string{"Role": "Role", "path/Role": "Role", "arn:aws:iam::123:role/p/Role": "Role"} {
		if got := RoleName(in); got != want {
			t.Errorf("RoleName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoMatchMessage(t *testing.T) {
	err := &NoMatchError{What: "subnets", Field: "subnetSelectorTerms",
		Terms: describeTerms([]string{describeTerm(map[string]string{"karpenter.sh/discovery": "x"}, "id", "")})}
	if want := "no subnets matched subnetSelectorTerms [tags karpenter.sh/discovery=x]"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}
