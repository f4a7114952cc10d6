package awssim

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// TestSetKubernetesVersion: POST kubernetes-version upgrades the control plane: DescribeCluster answers the new
// version and its AMI parameters exist beside the old version's; a malformed version is refused.
func TestSetKubernetesVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	version := func() string {
		t.Helper()
		out, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dovetail")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Cluster.Version)
	}
	if v := version(); v != "1.34" {
		t.Fatalf("version %q, want 1.34", v)
	}
	post := func(body string) int {
		t.Helper()
		resp, err := http.Post(e.srv.URL+"/_awssim/kubernetes-version", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"version": "1.35"}`); code != http.StatusOK {
		t.Fatalf("POST = %d", code)
	}
	if v := version(); v != "1.35" {
		t.Errorf("version %q after the upgrade, want 1.35", v)
	}
	for _, k8s := range []string{"1.34", "1.35"} {
		name := "/aws/service/eks/optimized-ami/" + k8s + "/amazon-linux-2023/x86_64/standard/recommended/image_id"
		if _, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if code := post(`{"version": "v1.36"}`); code != http.StatusBadRequest {
		t.Errorf("POST v1.36 = %d, want 400", code)
	}
}
