//go:build e2e

package e2e

import (
	"context"
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
// pod requesting a GPU all end up Running, on nodes that satisfy their constraints.
func TestSchedulingConstraints(t *testing.T) {
	ctx := context.Background()
	const pool = "constraints"
	setupPool(t, pool, framework.PoolOptions{Categories: []string{"c", "m", "g"}, CapacityTypes: []string{"on-demand"}})

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
	for _, zone := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		lo, hi = min(lo, perZone[zone]), max(hi, perZone[zone])
	}
	if hi-lo > 1 {
		t.Errorf("zone spread violated: %v", perZone)
	}
}
