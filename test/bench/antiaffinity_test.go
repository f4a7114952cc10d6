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

// TestScaleOutSelfAntiAffinity (issue 16): pods that may not share a node with another pod of their Deployment
// (required pod anti-affinity on the hostname, against their own labels), so the scale-out launches a node per
// pod: the kube-scheduler's inter-pod affinity check, not a spread constraint, keeps them apart. It measures the
// time until every pod is Running, NodeClaims per pod and CreateFleet calls. DOVETAIL_BENCH_ANTI_PODS sets the pod
// count (default 500, the size).
func TestScaleOutSelfAntiAffinity(t *testing.T) {
	ctx := context.Background()
	const pool = "anti"
	pods := benchCount(t, "DOVETAIL_BENCH_ANTI_PODS", 500, 1)
	tracker := trackedPool(t, pool, framework.PoolOptions{}, pods)
	stopMemory := controllerMemory(t)
	fleetsBefore, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := deployment(pool, "anti", pool, pool, int32(pods), "900m", "3174Mi")
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}},
		}},
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
		"nodeClaimsPerPod":         float64(len(claims)) / float64(pods),
		"createFleetCalls":         fleets,
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("self-anti-affinity scale-out of %d pods: all Running %.1fs after apply; %d NodeClaims, %d CreateFleet calls; controller peak RSS %v MiB",
		pods, seconds(allRunning.Sub(applied)), len(claims), fleets, memory["controllerPeakRSSMiB"])
	report(t, result{
		Name:    fmt.Sprintf("scale-out-self-anti-affinity-%d-pods", pods),
		Figures: figures,
		Targets: map[string]any{"secondsApplyToAllRunning": "< 180", "createFleetCalls": "<= nodeClaims/5", "nodeClaimsPerPod": "1"},
	})
}
