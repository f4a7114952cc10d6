//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestScaleOutMixed: the mix of Karpenter's performance suite that needs a node per pod and large
// nodes at once: hostname-spread pods of 0.9 cpu / 3.1Gi, pods of 3.5 cpu / 28Gi and do-not-disrupt pods of
// 0.9 cpu / 3.1Gi, 500 : 500 : 100. DOVETAIL_BENCH_MIXED_PODS sets the total (default 1,100; the second
// size is 2,000). It reports the time until every pod is Running, the longest plateau (time without a new pod
// Running before all are), NodeClaims and CreateFleet calls, and at the end the nodes holding no pod (planned
// nodes left empty) and the large nodes (≥ 28Gi allocatable) holding only small pods, when all pods run and once
// no node is empty (at most a minute later: the provisioner deletes the surplus planned nodes then); controller
// peak RSS.
// Targets: 1,100 pods < 180 s, 2,000 pods < 600 s, no plateau > 20 s, no empty node, CreateFleet ≤ NodeClaims/5.
// It waits 20 minutes per 1,100 pods; a run that times out still logs each stack process's CPU over the phase.
func TestScaleOutMixed(t *testing.T) {
	ctx := context.Background()
	const pool = "mixed"
	total := benchCount(t, "DOVETAIL_BENCH_MIXED_PODS", 1100, 11)
	dnd := total / 11
	spread := (total - dnd) / 2
	big := total - dnd - spread
	tracker := trackedPool(t, pool, framework.PoolOptions{}, total)
	// DOVETAIL_BENCH_MIXED_CONSOLIDATE_AFTER (e.g. the example's 1m) sets the NodePool's consolidateAfter with a
	// budget of 0 (nothing is disrupted) instead of Never, the default here as in the other benches. Either way
	// the provisioner deletes the planned nodes the kube-scheduler left empty.
	if after := os.Getenv("DOVETAIL_BENCH_MIXED_CONSOLIDATE_AFTER"); after != "" {
		setDisruption(t, pool, after, "0")
	}
	// A run that does not finish still reports where the CPU went (is the 2-core control plane the limit?).
	var once sync.Once
	var memory map[string]any
	measure := controllerMemory(t)
	stopMemory := func() map[string]any {
		once.Do(func() { memory = measure() })
		return memory
	}
	t.Cleanup(func() {
		if t.Failed() {
			stopMemory()
		}
	})
	fleetsBefore, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := deployment(pool, "spread", pool, pool, int32(spread), "900m", "3174Mi")
	s.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	b := deployment(pool, "big", pool, pool, int32(big), "3500m", "28Gi")
	d := deployment(pool, "dnd", pool, pool, int32(dnd), "900m", "3174Mi")
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations[karpv1.DoNotDisruptAnnotationKey] = "true"
	applied := time.Now()
	for _, dep := range []client.Object{s, b, d} {
		if err := env.Client.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
	}
	plateau := followScaleOut(t, pool, tracker, total, applied, time.Duration(max(1, total/1100))*20*time.Minute)
	_, _, allRunning := tracker.milestones()
	stopMemory()
	claims, fleets := claimsAndFleets(t, pool, fleetsBefore)
	empty, largeWithSmall, err := nodeShapes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	// Planned nodes whose pods went elsewhere are deleted once nothing placeable is pending (provisioning's
	// surplusGrace, 10 s): the end state is the cluster a minute after all pods run, or once no node is empty.
	emptyAtRunning, largeAtRunning, settled := empty, largeWithSmall, time.Now()
	if empty > 0 {
		var shapeErr error
		// A timeout is a figure (the empty nodes left), not a failure.
		_ = framework.Poll(ctx, time.Minute, 5*time.Second, func(context.Context) (bool, string, error) {
			// The test's context, not the poll's: a list cut short by the poll's deadline is no figure.
			empty, largeWithSmall, shapeErr = nodeShapes(ctx, pool)
			return shapeErr == nil && empty == 0, fmt.Sprintf("%d empty nodes", empty), shapeErr
		})
		if shapeErr != nil {
			t.Fatal(shapeErr)
		}
		settled = time.Now()
	}
	figures := map[string]any{
		"pods":                     total,
		"secondsApplyToAllRunning": seconds(allRunning.Sub(applied)),
		"longestPlateauSeconds":    seconds(plateau),
		"nodeClaims":               len(claims),
		"createFleetCalls":         fleets,
		"emptyNodes":               empty,
		"largeNodesOnlySmallPods":  largeWithSmall,
		"emptyNodesAtAllRunning":   emptyAtRunning,
		"largeOnlySmallAtRunning":  largeAtRunning,
		"secondsToSettled":         seconds(settled.Sub(allRunning)),
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("mixed scale-out of %d pods (%d spread, %d large, %d do-not-disrupt): all Running %.1fs after apply, longest plateau %.1fs; %d NodeClaims, %d CreateFleet calls; "+
		"%d empty nodes, %d large nodes with only small pods (%d and %d when all ran, %.1fs before); controller peak RSS %v MiB",
		total, spread, big, dnd, seconds(allRunning.Sub(applied)), seconds(plateau), len(claims), fleets, empty, largeWithSmall,
		emptyAtRunning, largeAtRunning, seconds(settled.Sub(allRunning)), memory["controllerPeakRSSMiB"])
	report(t, result{
		Name:    fmt.Sprintf("scale-out-mixed-%d-pods", total),
		Figures: figures,
		Targets: map[string]any{"secondsApplyToAllRunning": "< 180 (1,100 pods), < 600 (2,000)", "longestPlateauSeconds": "<= 20",
			"createFleetCalls": "<= nodeClaims/5", "emptyNodes": "0"},
	})
}

// nodeShapes counts the pool's Nodes that hold no pod of the pool's namespace, and those with at least 28Gi
// allocatable whose pods are all small (no pod of the "big" Deployment).
func nodeShapes(ctx context.Context, pool string) (empty, largeWithSmall int, err error) {
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return 0, 0, err
	}
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(pool)); err != nil {
		return 0, 0, err
	}
	type load struct{ all, big int }
	on := map[string]*load{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if on[p.Spec.NodeName] == nil {
			on[p.Spec.NodeName] = &load{}
		}
		on[p.Spec.NodeName].all++
		if p.Labels["app"] == "big" {
			on[p.Spec.NodeName].big++
		}
	}
	large := resource.MustParse("28Gi")
	for i := range nodes.Items {
		n := &nodes.Items[i]
		l := on[n.Name]
		switch {
		case l == nil:
			empty++
		case l.big == 0 && n.Status.Allocatable.Memory().Cmp(large) >= 0:
			largeWithSmall++
		}
	}
	return empty, largeWithSmall, nil
}
