//go:build e2e

package upgrade

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestControlPlaneUpgradeDriftsToNewAMI: nodes launched at Kubernetes 1.34 from an al2023@latest alias drift
// (Drifted, reason AMIDrift) once the simulated EKS control plane moves to 1.35, and are replaced by nodes of
// the 1.35 AMI, by the same controller process (no restart).
func TestControlPlaneUpgradeDriftsToNewAMI(t *testing.T) {
	const pool, replicas = "upgrade", 2
	ctx := context.Background()
	// One pod a node (1500m of an m5.large's 2 vCPUs); every node may be replaced at once.
	env.SetupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"},
		Alias: "al2023@latest", Budgets: []map[string]any{{"nodes": "100%"}}})
	labels := map[string]string{"app": "app"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, replicas, "1500m", "512Mi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, replicas, 2*time.Minute)
	before, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	oldAMIs := map[string]bool{}
	oldClaims := map[string]bool{}
	for _, nc := range before {
		if nc.Status.ImageID == "" {
			t.Fatalf("NodeClaim %s has no image id", nc.Name)
		}
		oldAMIs[nc.Status.ImageID] = true
		oldClaims[nc.Name] = true
	}
	if len(oldAMIs) != 1 {
		t.Fatalf("NodeClaims launched from %v, want one AMI", keys(oldAMIs))
	}
	pid, err := env.ControllerPID()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := env.SimAdmin(ctx, "POST", "kubernetes-version", map[string]string{"version": "1.35"}); err != nil {
		t.Fatalf("upgrading the simulated control plane: %v", err)
	}

	// The drifted NodeClaims go as soon as their replacements are ready, so their condition is watched closely
	// until every one of them was seen Drifted (or gone, its termination event naming drift).
	drifted := map[string]string{}
	err = framework.Poll(ctx, 3*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		var newAMI []string
		left := 0
		for _, nc := range claims {
			if oldClaims[nc.Name] {
				left++
				if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
					drifted[nc.Name] = c.Reason
				}
				continue
			}
			if nc.Status.ImageID != "" && !oldAMIs[nc.Status.ImageID] && nc.IsTrue(karpv1.ConditionTypeInitialized) {
				newAMI = append(newAMI, nc.Name)
			}
		}
		p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels(labels))
		state := fmt.Sprintf("%d old NodeClaims left, drifted %v, %d initialized on a new AMI; %s", left, drifted, len(newAMI), p)
		return left == 0 && len(newAMI) >= replicas && p.PodsRunning >= replicas, state, err
	})
	if err != nil {
		t.Fatalf("waiting for the nodes to be replaced after the upgrade: %v\n%s", err, env.Describe(pool, pool))
	}
	t.Logf("nodes replaced %s after the upgrade; Drifted conditions seen: %v", time.Since(start).Round(time.Second), drifted)
	for name := range oldClaims {
		if reason, ok := drifted[name]; ok {
			if reason != karpv1.ReasonAMIDrift {
				t.Errorf("NodeClaim %s Drifted with reason %q, want %s", name, reason, karpv1.ReasonAMIDrift)
			}
			continue
		}
		events, err := env.Events(ctx, "default", "NodeClaim", name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, "Drifted") }) {
			t.Errorf("NodeClaim %s was never seen Drifted and no event names drift: %v", name, events)
		}
	}
	after, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range after {
		if oldAMIs[nc.Status.ImageID] {
			t.Errorf("NodeClaim %s still runs the 1.34 AMI %s", nc.Name, nc.Status.ImageID)
		}
	}
	if now, err := env.ControllerPID(); err != nil || now != pid {
		t.Errorf("controller pid %d after the upgrade (%v), want %d: the controller restarted", now, err, pid)
	}
}

// waitRunning waits until n pods with labels in namespace are Running.
func waitRunning(t *testing.T, namespace string, labels map[string]string, n int, timeout time.Duration) {
	t.Helper()
	if err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, env.Client, namespace, client.MatchingLabels(labels))
		return p.PodsRunning >= n, p.String(), err
	}); err != nil {
		t.Fatalf("waiting for %d Running pods: %v\n%s", n, err, env.Describe(namespace, namespace))
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
