//go:build e2e

package e2e

// This file sorts last on purpose: teardown removes every NodePool of the cluster.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestTeardown (scenario 5): a cluster with 3 NodePools and 30 nodes. Deleting an EC2NodeClass that is in use is
// held with a condition naming its NodeClaims; `dovetailctl teardown` then leaves no NodeClaim, no Node and no
// pending or running instance.
func TestTeardown(t *testing.T) {
	ctx := context.Background()
	pools := []string{"teardown-a", "teardown-b", "teardown-c"}
	for _, pool := range pools {
		if err := framework.EnsureNamespace(ctx, env.Client, pool); err != nil {
			t.Fatal(err)
		}
		objs, err := framework.NodePool(pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := framework.Apply(ctx, env.Client, objs...); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 10, "1500m", "512Mi")); err != nil {
			t.Fatal(err)
		}
	}
	for _, pool := range pools {
		waitRunning(t, pool, map[string]string{"app": "app"}, 10, 3*time.Minute)
	}

	// An EC2NodeClass in use is not removed; its status says which NodeClaims hold it.
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pools[0]}, nc); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	claims, err := env.NodeClaims(ctx, pools[0])
	if err != nil || len(claims) == 0 {
		t.Fatalf("nodeclaims of %s: %d, %v", pools[0], len(claims), err)
	}
	err = framework.Poll(ctx, 30*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		got := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return false, "", fmt.Errorf("the EC2NodeClass in use disappeared: %w", err)
		}
		for _, c := range got.Status.Conditions {
			for _, claim := range claims {
				if strings.Contains(c.Message, claim.Name) {
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("conditions %+v name none of the NodeClaims", got.Status.Conditions), nil
	})
	if err != nil {
		t.Fatalf("deleting an EC2NodeClass in use: %v", err)
	}

	cmd := exec.CommandContext(ctx, filepath.Join(env.RepoRoot, "bin", "dovetailctl"), "teardown",
		"--kubeconfig", env.Kubeconfig, "--cluster-name", env.ClusterName, "--timeout", "5m")
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL="+env.AWSEndpoint, "AWS_REGION="+framework.Region,
		"AWS_ACCESS_KEY_ID=123456789012", "AWS_SECRET_ACCESS_KEY=local-simulator", "AWS_EC2_METADATA_DISABLED=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("dovetailctl teardown: %v\n%s", err, out.String())
	}
	t.Logf("dovetailctl teardown took %.1fs:\n%s", time.Since(start).Seconds(), out.String())

	claimList := &karpv1.NodeClaimList{}
	if err := env.Client.List(ctx, claimList); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		t.Fatal(err)
	}
	live, err := env.ClusterInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimList.Items) != 0 || len(nodes.Items) != 0 || len(live) != 0 {
		t.Errorf("after teardown: %d nodeclaims, %d nodes, %d pending/running instances %v", len(claimList.Items), len(nodes.Items), len(live), live)
	}
	pool := &karpv1.NodePoolList{}
	if err := env.Client.List(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if len(pool.Items) != 0 {
		t.Errorf("after teardown: %d NodePools left", len(pool.Items))
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), &awsv1.EC2NodeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("after teardown: EC2NodeClass %s still present (%v)", nc.Name, err)
	}
}
