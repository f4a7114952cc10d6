//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// setupPool applies a NodePool and EC2NodeClass named name and a namespace of the same name, and registers a
// cleanup that deletes the NodePool and waits until its NodeClaims are gone, so scenarios do not leak nodes into
// each other.
func setupPool(t *testing.T, name string, opts framework.PoolOptions) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, name); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The workload goes first: a PodDisruptionBudget would otherwise block the drain of the pool's nodes for
		// ever once the pool is gone and no replacement capacity can be launched.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", name, err)
		}
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, pool); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting nodepool %s: %v", name, err)
			return
		}
		// Three minutes, and two seconds more per NodeClaim: the full-size fault scenarios leave 100 nodes, whose
		// termination took over three minutes on a machine at load 25.
		timeout := 3 * time.Minute
		if claims, err := env.NodeClaims(ctx, name); err == nil {
			timeout += time.Duration(len(claims)) * 2 * time.Second
		}
		err := framework.Poll(ctx, timeout, time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := env.NodeClaims(ctx, name)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Errorf("cleanup of nodepool %s: %v", name, err)
		}
	})
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
