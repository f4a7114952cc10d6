//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// staticWatch samples a static NodePool's NodeClaims until stopped and records every sample outside the bounds:
// more than maxDeleting being deleted at once (the budget), more than maxActive not being deleted (limits.nodes),
// or fewer than the current floor.
type staticWatch struct {
	mu         sync.Mutex
	floor      int
	violations []string
	samples    int
}

func (w *staticWatch) setFloor(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.floor = n
}

func (w *staticWatch) run(ctx context.Context, pool string, maxActive, maxDeleting int) {
	for ctx.Err() == nil {
		claims, err := env.NodeClaims(ctx, pool)
		if err == nil {
			active, deleting := 0, 0
			for _, c := range claims {
				if c.DeletionTimestamp == nil {
					active++
				} else {
					deleting++
				}
			}
			w.mu.Lock()
			w.samples++
			if deleting > maxDeleting || active > maxActive || active < w.floor {
				w.violations = append(w.violations, fmt.Sprintf("%s: %d active (floor %d, limit %d), %d deleting (budget %d)",
					time.Now().Format("15:04:05.000"), active, w.floor, maxActive, deleting, maxDeleting))
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // sampling interval of the watch, not a wait for state
		}
	}
}

// waitStatic waits until the pool has exactly n NodeClaims, all initialized, none being deleted, and returns
// their names.
func waitStatic(t *testing.T, pool string, n int, timeout time.Duration, extra func([]karpv1.NodeClaim) (bool, string)) []string {
	t.Helper()
	var names []string
	err := framework.Poll(context.Background(), timeout, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		names = names[:0]
		ready := 0
		for _, c := range claims {
			names = append(names, c.Name)
			if c.DeletionTimestamp == nil && c.IsTrue(karpv1.ConditionTypeInitialized) {
				ready++
			}
		}
		status := fmt.Sprintf("nodeclaims %v, %d initialized and not deleting", names, ready)
		if len(claims) != n || ready != n {
			return false, status, nil
		}
		if extra != nil {
			ok, more := extra(claims)
			return ok, status + ", " + more, nil
		}
		return true, status, nil
	})
	if err != nil {
		t.Fatalf("static nodepool %s to %d nodes: %v\ncontroller log:\n%s", pool, n, err, env.LogTail("dovetail", 40))
	}
	sort.Strings(names)
	return names
}

// staticPool creates a static NodePool of replicas m5.large nodes, limits.nodes limit and a disruption budget of
// one node, and samples it until the test ends (watch.run with maxActive and maxDeleting); samples out of bounds
// fail the test then.
func staticPool(t *testing.T, pool string, replicas int64, limit string, maxActive, maxDeleting int) *staticWatch {
	t.Helper()
	setupPool(t, pool, framework.PoolOptions{
		InstanceTypes: []string{"m5.large"}, Replicas: ptr.To(replicas), Limits: map[string]any{"nodes": limit},
		Budgets: []map[string]any{{"nodes": "1"}}, ConsolidateAfter: "0s",
	})
	watch := &staticWatch{}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); watch.run(ctx, pool, maxActive, maxDeleting) }()
	t.Cleanup(func() {
		stop()
		wg.Wait()
		if len(watch.violations) > 0 {
			t.Errorf("%d of %d samples out of bounds:\n%s", len(watch.violations), watch.samples, strings.Join(watch.violations, "\n"))
		}
	})
	return watch
}

func kubectlScale(t *testing.T, pool string, n int) {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", env.Kubeconfig, "scale", "nodepool", pool, fmt.Sprintf("--replicas=%d", n)).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl scale nodepool %s --replicas=%d: %v\n%s", pool, n, err, out)
	}
}

// TestStaticNodePool (StaticCapacity): a NodePool with replicas 3 gets 3 nodes with no pod at all; kubectl scale
// takes it to 5 and then to 2; a change to its template drifts both nodes, which are replaced one at a time,
// replacement first. A budget of one node and limits.nodes 6 bound every sample along the way; no pod ever asks
// for these nodes, and consolidation leaves them alone.
func TestStaticNodePool(t *testing.T) {
	ctx := context.Background()
	const pool = "static"
	watch := staticPool(t, pool, 3, "6", 6, 1)

	start := time.Now()
	waitStatic(t, pool, 3, 90*time.Second, nil)
	watch.setFloor(3)
	t.Logf("3 nodes %.1fs after the NodePool was created", time.Since(start).Seconds())

	start = time.Now()
	kubectlScale(t, pool, 5)
	waitStatic(t, pool, 5, 90*time.Second, nil)
	t.Logf("scaled to 5 in %.1fs", time.Since(start).Seconds())

	start = time.Now()
	watch.setFloor(2)
	kubectlScale(t, pool, 2)
	kept := waitStatic(t, pool, 2, 90*time.Second, nil)
	t.Logf("scaled to 2 in %.1fs (one deletion at a time)", time.Since(start).Seconds())

	// Drift: a new template label changes the NodePool's hash. (A change to the EC2NodeClass drifts too;
	// nodeclaim.disruption watches both.)
	start = time.Now()
	np := &karpv1.NodePool{}
	np.Name = pool
	if err := env.Client.Patch(ctx, np, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{"metadata":{"labels":{"e2e-static":"2"}}}}}`))); err != nil {
		t.Fatal(err)
	}
	waitStatic(t, pool, 2, 2*time.Minute, func(claims []karpv1.NodeClaim) (bool, string) {
		for _, c := range claims {
			for _, k := range kept {
				if c.Name == k {
					return false, "waiting for " + k + " to be replaced"
				}
			}
		}
		return true, ""
	})
	t.Logf("both drifted nodes replaced in %.1fs", time.Since(start).Seconds())
}
