//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestScaleOutHostnameSpread (issue 16): pods spread one per node (hostname topology spread, 0.9 cpu / 3.1Gi as
// in Karpenter's performance suite), so the scale-out launches a node per pod: it measures how many CreateFleet
// calls the launches take (identical launches are merged) and the time until every pod is Running.
// DOVETAIL_BENCH_SPREAD_PODS sets the pod count (default 1,000, the size).
func TestScaleOutHostnameSpread(t *testing.T) {
	ctx := context.Background()
	const pool = "spread"
	pods := 1000
	if v := os.Getenv("DOVETAIL_BENCH_SPREAD_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DOVETAIL_BENCH_SPREAD_PODS=%q: want a positive pod count", v)
		}
		pods = n
	}
	setupPool(t, pool, framework.PoolOptions{})
	tracker, err := trackPods(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	tracker.expect(pods)
	stopMemory := controllerMemory(t)
	fleetsBefore, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := deployment(pool, "spread", pool, pool, int32(pods), "900m", "3174Mi")
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	applied := time.Now()
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	lastLog := time.Now()
	err = framework.Poll(ctx, 15*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		at, running := tracker.allRunning()
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			if p, err := framework.GetProgress(ctx, env.Client, pool, nil); err == nil {
				t.Logf("+%3.0fs %s", time.Since(applied).Seconds(), p)
			}
		}
		return !at.IsZero(), fmt.Sprintf("%d/%d pods Running", running, pods), nil
	})
	if err != nil {
		t.Fatalf("%d pods never all Running: %v", pods, err)
	}
	_, _, allRunning := tracker.milestones()
	memory := stopMemory()
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	fleets, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]any{
		"pods":                     pods,
		"secondsApplyToAllRunning": seconds(allRunning.Sub(applied)),
		"nodeClaims":               len(claims),
		"createFleetCalls":         fleets - fleetsBefore,
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("hostname-spread scale-out of %d pods: all Running %.1fs after apply; %d NodeClaims, %d CreateFleet calls; controller peak RSS %v MiB",
		pods, seconds(allRunning.Sub(applied)), len(claims), fleets-fleetsBefore, memory["controllerPeakRSSMiB"])
	report(t, result{
		Name:    fmt.Sprintf("scale-out-hostname-spread-%d-pods", pods),
		Figures: figures,
		Targets: map[string]any{"secondsApplyToAllRunning": "< 180", "createFleetCalls": "<= nodeClaims/5"},
	})
}
