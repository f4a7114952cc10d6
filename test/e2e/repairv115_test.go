//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestNodeRepairReplacementFirst (NodeRepair, repair as a disruption method): of 11 nodes, 3 turn unhealthy
// (KernelReady=False, within the 20% safety limit of 3); one carries karpenter.sh/do-not-repair. With a budget of 1
// node for the reason Unhealthy, the two others are replaced one at a time, each replacement launched (and
// initialized) before its node is deleted; the vetoed node stays, with a DisruptionBlocked event saying why.
func TestNodeRepairReplacementFirst(t *testing.T) {
	ctx := context.Background()
	const pool = "repair-first"
	// One pod per node: m5.large has 2 cpu, each pod asks for 1500m.
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never", InstanceTypes: []string{"m5.large"},
		Budgets: []map[string]any{{"nodes": "1", "reasons": []any{"Unhealthy"}}}})
	labels := map[string]string{"app": "app"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 11, "1500m", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, 11, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 11 {
		t.Fatalf("%d nodeclaims, want 11", len(claims))
	}
	sick := map[string]string{} // nodeclaim -> node
	for _, c := range claims[:3] {
		sick[c.Name] = c.Status.NodeName
	}
	vetoed := claims[0]
	n := &corev1.Node{}
	n.Name = vetoed.Status.NodeName
	if err := env.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+karpv1.DoNotRepairAnnotationKey+`":"true"}}}`))); err != nil {
		t.Fatal(err)
	}
	for _, node := range sick {
		setKernelReady(ctx, t, node)
	}

	// Sample the pool while repair runs: at most one of the sick nodes disrupting at a time, and none deleted
	// before a replacement of its own (dovetail.sh/replacement-for) exists.
	defer sampleClaims(ctx, t, pool, "replacement-first or the budget", func(cs []karpv1.NodeClaim) []string {
		disrupting, replacements := 0, 0
		var deleted []string
		for _, c := range cs {
			if c.Annotations["dovetail.sh/replacement-for"] != "" {
				replacements++
			}
			if _, ok := sick[c.Name]; !ok {
				continue
			}
			if c.DeletionTimestamp != nil || c.Annotations["dovetail.sh/disruption-command"] != "" {
				disrupting++
			}
			if c.DeletionTimestamp != nil {
				deleted = append(deleted, c.Name)
			}
		}
		var out []string
		if disrupting > 1 {
			out = append(out, fmt.Sprintf("%d unhealthy nodes disrupting at once (Unhealthy budget 1)", disrupting))
		}
		if len(deleted) > 0 && replacements == 0 {
			out = append(out, fmt.Sprintf("%v deleted with no replacement launched", deleted))
		}
		return out
	})()

	start := time.Now()
	err = framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		cs, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		left := map[string]bool{}
		for _, c := range cs {
			if _, ok := sick[c.Name]; ok {
				left[c.Name] = true
			}
		}
		pods, err := env.Pods(ctx, pool, labels)
		if err != nil {
			return false, "", err
		}
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return len(left) == 1 && left[vetoed.Name] && running == 11,
			fmt.Sprintf("unhealthy nodeclaims left %v (want only %s), %d pods running", left, vetoed.Name, running), nil
	})
	if err != nil {
		t.Fatalf("repair: %v\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("two unhealthy nodes replaced in %.1fs", time.Since(start).Seconds())
	events, err := env.Events(ctx, "default", "Node", vetoed.Status.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	want := `DisruptionBlocked: Repair is blocked through the "karpenter.sh/do-not-repair" annotation`
	if !strings.Contains(strings.Join(events, "\n"), want) {
		t.Errorf("no %q event on the vetoed node %s; events:\n%s", want, vetoed.Status.NodeName, strings.Join(events, "\n"))
	}
}

// TestStaticDriftTerminateFirst (StaticCapacity, TerminateFirstDrift): a static NodePool of 2 replicas at its
// limits.nodes of 2 has no room to replace a drifted node first; terminate-first deletes the drifted nodes (one at
// a time, the budget) and the NodePool refills, never above its limit, until no drifted node is left.
func TestStaticDriftTerminateFirst(t *testing.T) {
	ctx := context.Background()
	const pool = "static-tf"
	watch := staticPool(t, pool, 2, "2", 2, 1)
	kept := waitStatic(t, pool, 2, 90*time.Second, nil)
	watch.setFloor(1) // terminate-first: one node down while its replacement launches

	start := time.Now()
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
	t.Logf("both drifted nodes replaced terminate-first in %.1fs", time.Since(start).Seconds())
	events, err := env.Events(ctx, "default", "NodePool", pool)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(events, "\n"), "terminate-first") {
		t.Errorf("no terminate-first deletion among the NodePool's events:\n%s", strings.Join(events, "\n"))
	}
	match := map[string]string{"nodepool": pool, "reason": "drifted", "terminate_first_reason": "static-at-limit"}
	if v, err := env.MetricSum(ctx, "karpenter_voluntary_disruption_terminate_first_decisions_total", match); err != nil || v != 2 {
		t.Errorf("karpenter_voluntary_disruption_terminate_first_decisions_total%v = %v (%v), want 2", match, v, err)
	}
}

// TestNodeRepairTerminateFirst (NodeRepair, TerminateFirstRepair): a NodePool at its limits.nodes of 2, one pod on
// each node, has no room to launch a replacement for an unhealthy node first; terminate-first deletes the node
// before any replacement exists, and the provisioner replaces it once it is gone, never above the limit. The
// decision is counted in karpenter_voluntary_disruption_terminate_first_decisions_total.
func TestNodeRepairTerminateFirst(t *testing.T) {
	ctx := context.Background()
	const pool = "repair-tf"
	// One pod per node: m5.large has 2 cpu, each pod asks for 1500m.
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never", InstanceTypes: []string{"m5.large"},
		Limits: map[string]any{"nodes": "2"}, Budgets: []map[string]any{{"nodes": "1"}}})
	labels := map[string]string{"app": "app"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 2, "1500m", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, 2, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 2 {
		t.Fatalf("%d nodeclaims, want 2", len(claims))
	}
	sick := claims[0]

	// Sample the pool while repair runs: never more than 2 NodeClaims (the limit), and no replacement launched by
	// the disruption controller (dovetail.sh/replacement-for): the provisioner launches the new node.
	defer sampleClaims(ctx, t, pool, "terminate-first or the limit", func(cs []karpv1.NodeClaim) []string {
		var out []string
		if len(cs) > 2 {
			out = append(out, fmt.Sprintf("%d nodeclaims, above limits.nodes 2", len(cs)))
		}
		for _, c := range cs {
			if c.Annotations["dovetail.sh/replacement-for"] != "" {
				out = append(out, fmt.Sprintf("replacement %s launched first", c.Name))
			}
		}
		return out
	})()

	setKernelReady(ctx, t, sick.Status.NodeName)
	start := time.Now()
	err = framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		cs, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		names := []string{}
		for _, c := range cs {
			if c.Name == sick.Name {
				return false, "the unhealthy nodeclaim " + sick.Name + " is still there", nil
			}
			names = append(names, c.Name)
		}
		pods, err := env.Pods(ctx, pool, labels)
		if err != nil {
			return false, "", err
		}
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return len(cs) == 2 && running == 2, fmt.Sprintf("nodeclaims %v, %d pods running", names, running), nil
	})
	if err != nil {
		t.Fatalf("terminate-first repair: %v\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("the unhealthy node replaced terminate-first in %.1fs", time.Since(start).Seconds())
	body, err := scrapeController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := `karpenter_voluntary_disruption_terminate_first_decisions_total{nodepool="` + pool + `",reason="unhealthy",terminate_first_reason="at-limit"} 1`
	if !strings.Contains(body, want) {
		t.Errorf("metrics lack %s", want)
	}
}

// sampleClaims checks the pool's NodeClaims every 200 ms, with check naming what each sample breaks, until the
// function it returns is called; that one stops the sampling and fails the test with the first ten samples that
// broke what (a rule the whole scenario must keep, which a check at its end cannot see).
func sampleClaims(ctx context.Context, t *testing.T, pool, what string, check func([]karpv1.NodeClaim) []string) (stop func()) {
	t.Helper()
	var mu sync.Mutex
	var violations []string
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			if cs, err := env.NodeClaims(wctx, pool); err == nil {
				at := time.Now().Format("15:04:05.000")
				mu.Lock()
				for _, v := range check(cs) {
					violations = append(violations, at+": "+v)
				}
				mu.Unlock()
			}
			select {
			case <-wctx.Done():
			case <-time.After(200 * time.Millisecond): // sampling interval, not a wait for state
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		if len(violations) > 0 {
			t.Errorf("%d samples broke %s:\n%s", len(violations), what, strings.Join(violations[:min(len(violations), 10)], "\n"))
		}
	}
}
