//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// setupPool applies a NodePool and EC2NodeClass named name and a namespace of the same name, removed when the
// test ends (framework.Stack.SetupPool).
func setupPool(t *testing.T, name string, opts framework.PoolOptions) {
	t.Helper()
	env.SetupPool(t, name, opts)
}

// waitRunning waits until n pods with the labels are Running in the namespace.
func waitRunning(t *testing.T, namespace string, labels map[string]string, n int, timeout time.Duration) {
	t.Helper()
	err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, env.Client, namespace, client.MatchingLabels(labels))
		return p.PodsRunning >= n, p.String(), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Running pods %v in %s: %v\n%s", n, labels, namespace, err, env.Describe(namespace, namespace))
	}
}

// onlyNodeClaim waits until the pool has exactly one NodeClaim with a registered node and returns it.
func onlyNodeClaim(t *testing.T, pool string) karpv1.NodeClaim {
	t.Helper()
	var claim karpv1.NodeClaim
	err := framework.Poll(context.Background(), time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil || len(claims) != 1 || claims[0].Status.NodeName == "" {
			return false, fmt.Sprintf("%d nodeclaims", len(claims)), err
		}
		claim = claims[0]
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("nodepool %s: %v", pool, err)
	}
	return claim
}
