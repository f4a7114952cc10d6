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

// TestScaleOutHostnameSpread: pods spread one per node (hostname topology spread, 0.9 cpu / 3.1Gi as
// in Karpenter's performance suite), so the scale-out launches a node per pod: it measures how many CreateFleet
// calls the launches take (identical launches are merged) and the time until every pod is Running.
// DOVETAIL_BENCH_SPREAD_PODS sets the pod count (default 1,000, the size).
func TestScaleOutHostnameSpread(t *testing.T) {
	onePerNodeScaleOut(t, "spread", "hostname-spread", "DOVETAIL_BENCH_SPREAD_PODS", 1000, func(spec *corev1.PodSpec) {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
		}}
	})
}

// onePerNodeScaleOut scales out a Deployment named after pool (label app=pool) of 0.9 cpu / 3.1Gi pods that
// keep apart, one per node, as apart sets on their spec; countEnv sets the pod count (default def). It reports the
// time until every pod is Running, NodeClaims (per pod), CreateFleet calls and the controller's memory.
func onePerNodeScaleOut(t *testing.T, pool, kind, countEnv string, def int, apart func(*corev1.PodSpec)) {
	ctx := context.Background()
	pods := benchCount(t, countEnv, def, 1)
	tracker := trackedPool(t, pool, framework.PoolOptions{}, pods)
	stopMemory := controllerMemory(t)
	fleetsBefore, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := deployment(pool, pool, pool, pool, int32(pods), "900m", "3174Mi")
	apart(&d.Spec.Template.Spec)
	applied := time.Now()
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	followScaleOut(t, pool, tracker, pods, applied, 15*time.Minute)
	_, _, allRunning := tracker.milestones()
	memory := stopMemory()
	claims, fleets := claimsAndFleets(t, pool, fleetsBefore)
	// followScaleOut failed the test unless every pod ran; pods kept apart need a node each, so fewer NodeClaims
	// than pods means two of them shared a node (timings are figures, not asserts).
	if len(claims) < pods {
		t.Errorf("%d pods kept apart ran on %d NodeClaims: some shared a node", pods, len(claims))
	}
	figures := map[string]any{
		"pods":                     pods,
		"secondsApplyToAllRunning": seconds(allRunning.Sub(applied)),
		"nodeClaims":               len(claims),
		"nodeClaimsPerPod":         float64(len(claims)) / float64(pods),
		"createFleetCalls":         fleets,
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("%s scale-out of %d pods: all Running %.1fs after apply; %d NodeClaims, %d CreateFleet calls; controller peak RSS %v MiB",
		kind, pods, seconds(allRunning.Sub(applied)), len(claims), fleets, memory["controllerPeakRSSMiB"])
	report(t, result{
		Name:    fmt.Sprintf("scale-out-%s-%d-pods", kind, pods),
		Figures: figures,
		Targets: map[string]any{"secondsApplyToAllRunning": "< 180", "createFleetCalls": "<= nodeClaims/5", "nodeClaimsPerPod": "1"},
	})
}
