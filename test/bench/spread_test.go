//go:build bench

package bench

import (
	"context"
	"fmt"
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
	pods := benchCount(t, "DOVETAIL_BENCH_SPREAD_PODS", 1000, 1)
	tracker := trackedPool(t, pool, framework.PoolOptions{}, pods)
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
	followScaleOut(t, pool, tracker, pods, applied, 15*time.Minute)
	_, _, allRunning := tracker.milestones()
	memory := stopMemory()
	claims, fleets := claimsAndFleets(t, pool, fleetsBefore)
	figures := map[string]any{
		"pods":                     pods,
		"secondsApplyToAllRunning": seconds(allRunning.Sub(applied)),
		"nodeClaims":               len(claims),
		"createFleetCalls":         fleets,
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("hostname-spread scale-out of %d pods: all Running %.1fs after apply; %d NodeClaims, %d CreateFleet calls; controller peak RSS %v MiB",
		pods, seconds(allRunning.Sub(applied)), len(claims), fleets, memory["controllerPeakRSSMiB"])
	report(t, result{
		Name:    fmt.Sprintf("scale-out-hostname-spread-%d-pods", pods),
		Figures: figures,
		Targets: map[string]any{"secondsApplyToAllRunning": "< 180", "createFleetCalls": "<= nodeClaims/5"},
	})
}
