//go:build e2e

package v115

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// zones are the zones the scenarios' NodePools launch in.
var zones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

// TestDefaultSpreadAsKubeScheduler: a Deployment with no spread constraint of its own, whose six small pods fit
// on one node, is spread over the three zones by the cluster's default constraint (zone, maxSkew 1,
// DoNotSchedule): the controller, given it in SCHEDULER_CONFIG, launches one node in each zone, and the
// kube-scheduler, given it in its own configuration, then places two pods in each. Without SCHEDULER_CONFIG the
// controller launches one node, and the pods all land in its zone.
//
// The NodePool's startup taint keeps the pods off the nodes until all of them are up, so the kube-scheduler
// places them with every zone in view: on a node that comes up alone, a zone spread of one zone is never skewed.
func TestDefaultSpreadAsKubeScheduler(t *testing.T) {
	ctx := context.Background()
	const pool, hold = "default-spread", "e2e.dovetail.sh/hold"
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "Never", Requirements: []map[string]any{{"key": corev1.LabelTopologyZone, "operator": "In", "values": anys(zones)}}},
		corev1.Taint{Key: hold, Effect: corev1.TaintEffectNoSchedule})
	if err := env.Client.Create(ctx, framework.Deployment(pool, "web", pool, 6, "200m", "256Mi")); err != nil {
		t.Fatal(err)
	}

	// The controller's launches: every NodeClaim registered, and no other one for a few seconds.
	var nodes []corev1.Node
	settled := time.Time{}
	err := framework.Poll(ctx, 90*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		if nodes, err = env.Nodes(ctx, pool); err != nil {
			return false, "", err
		}
		if len(claims) == 0 || len(nodes) != len(claims) {
			settled = time.Time{}
			return false, fmt.Sprintf("%d nodeclaims, %d nodes", len(claims), len(nodes)), nil
		}
		if settled.IsZero() {
			settled = time.Now()
		}
		return time.Since(settled) > 5*time.Second, fmt.Sprintf("%d nodes registered", len(nodes)), nil
	})
	if err != nil {
		t.Fatalf("nodepool %s: %v\n%s", pool, err, env.Describe(pool, pool))
	}
	perZone := map[string]int{}
	for _, n := range nodes {
		perZone[n.Labels[corev1.LabelTopologyZone]]++
	}
	if d := cmp.Diff(map[string]int{"us-west-2a": 1, "us-west-2b": 1, "us-west-2c": 1}, perZone); d != "" {
		t.Errorf("nodes launched by zone (-want +got):\n%s", d)
	}

	// The kube-scheduler's placement, once the nodes take pods.
	for _, n := range nodes {
		if err := env.RemoveTaint(ctx, n.Name, hold); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, pool, map[string]string{"app": "web"}, 6, 90*time.Second)
	pods, err := env.Pods(ctx, pool, map[string]string{"app": "web"})
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for _, n := range nodes {
		zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	podsPerZone := map[string]int{}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		z, ok := zoneOf[p.Spec.NodeName]
		if !ok {
			t.Errorf("pod %s runs on %q, not a node the controller launched before the pods were placed", p.Name, p.Spec.NodeName)
		}
		podsPerZone[z]++
	}
	lo, hi := len(pods), 0
	for _, z := range zones {
		lo, hi = min(lo, podsPerZone[z]), max(hi, podsPerZone[z])
	}
	if hi-lo > 1 {
		t.Errorf("pods by zone %v: skew %d, the default constraint allows 1", podsPerZone, hi-lo)
	}
	// Nothing launched since: the pods went where the controller planned them.
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != len(nodes) {
		t.Errorf("%d nodeclaims after the pods ran, %d before", len(claims), len(nodes))
	}
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
