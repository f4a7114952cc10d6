//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestSchedulingConstraints: pods with a zone topology spread, pods with hostname anti-affinity and a
// pod requesting a GPU all end up Running, on nodes that satisfy their constraints. The kube-scheduler counts
// only the zones that already have a node of the pool, so a spread pod tried while one zone's node alone is up
// may go there without breaking its constraint: a startup taint keeps the pods off until every zone has a node.
func TestSchedulingConstraints(t *testing.T) {
	ctx := context.Background()
	const pool = "constraints"
	const hold = "dovetail.test/zones-not-up"
	zones := []string{"us-west-2a", "us-west-2b", "us-west-2c"}
	setupPool(t, pool, framework.PoolOptions{Categories: []string{"c", "m", "g"}, CapacityTypes: []string{"on-demand"},
		StartupTaints: []corev1.Taint{{Key: hold, Effect: corev1.TaintEffectNoSchedule}}})

	spread := framework.Deployment(pool, "spread", pool, 6, "500m", "512Mi")
	spread.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	apart := framework.Deployment(pool, "apart", pool, 3, "250m", "256Mi")
	apart.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}},
		}},
	}}
	gpu := framework.Deployment(pool, "gpu", pool, 1, "1", "2Gi")
	gpuQty := resource.MustParse("1")
	gpu.Spec.Template.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = gpuQty
	gpu.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": gpuQty}
	for _, d := range []client.Object{spread, apart, gpu} {
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	liftOnceZonesUp(t, pool, hold, zones)
	waitRunning(t, pool, map[string]string{"app": "spread"}, 6, 3*time.Minute)
	waitRunning(t, pool, map[string]string{"app": "apart"}, 3, time.Minute)
	waitRunning(t, pool, map[string]string{"app": "gpu"}, 1, time.Minute)

	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	pods, err := env.Pods(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	apartNodes := map[string]bool{}
	for _, p := range pods {
		n, ok := byName[p.Spec.NodeName]
		if !ok {
			t.Errorf("pod %s runs on %q, not a node of nodepool %s", p.Name, p.Spec.NodeName, pool)
			continue
		}
		switch p.Labels["app"] {
		case "spread":
			perZone[n.Labels[corev1.LabelTopologyZone]]++
		case "apart":
			if apartNodes[n.Name] {
				t.Errorf("two anti-affine pods on node %s", n.Name)
			}
			apartNodes[n.Name] = true
		case "gpu":
			if q := n.Status.Allocatable["nvidia.com/gpu"]; q.IsZero() {
				t.Errorf("GPU pod %s on node %s (%s) without nvidia.com/gpu", p.Name, n.Name, n.Labels[corev1.LabelInstanceTypeStable])
			}
			if n.Labels[karpv1.NodePoolLabelKey] != pool {
				t.Errorf("GPU node %s not from nodepool %s", n.Name, pool)
			}
		}
	}
	lo, hi := 1<<30, 0
	for _, zone := range zones {
		lo, hi = min(lo, perZone[zone]), max(hi, perZone[zone])
	}
	if hi-lo > 1 {
		t.Errorf("zone spread violated: %v", perZone)
	}
}

// liftOnceZonesUp waits until every NodeClaim of the pool has its node and the nodes cover the zones, then lifts
// the startup taint with the key from the pool's nodes (those registering later too) until the test ends.
func liftOnceZonesUp(t *testing.T, pool, key string, zones []string) {
	t.Helper()
	err := framework.Poll(context.Background(), 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		nodes, err := env.Nodes(ctx, pool)
		if err != nil {
			return false, "", err
		}
		registered := 0
		for i := range claims {
			if claims[i].Status.NodeName != "" {
				registered++
			}
		}
		up := map[string]int{}
		for _, n := range nodes {
			up[n.Labels[corev1.LabelTopologyZone]]++
		}
		missing := slices.DeleteFunc(slices.Clone(zones), func(z string) bool { return up[z] > 0 })
		return len(claims) > 0 && registered == len(claims) && len(missing) == 0,
			fmt.Sprintf("%d of %d nodeclaims registered; nodes by zone %v, none yet in %v", registered, len(claims), up, missing), nil
	})
	if err != nil {
		t.Fatalf("nodepool %s: %v\n%s", pool, err, env.Describe(pool, pool))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			if nodes, err := env.Nodes(ctx, pool); err == nil {
				for _, n := range nodes {
					if err := env.RemoveTaint(ctx, n.Name, key); err != nil && ctx.Err() == nil {
						t.Logf("lifting %s from %s: %v", key, n.Name, err)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}
