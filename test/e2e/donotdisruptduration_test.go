//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDoNotDisruptDurationExpires: a pod annotated karpenter.sh/do-not-disrupt: "1m" keeps an underutilized node
// from consolidation for a minute from the pod's start; then the node is replaced by a cheaper one and the pod
// runs there.
func TestDoNotDisruptDurationExpires(t *testing.T) {
	ctx := context.Background()
	const pool = "dnd-duration"
	const protection = time.Minute
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large", "m5.2xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "1s", Budgets: []map[string]any{{"nodes": "100%"}}})
	// The filler needs an m5.2xlarge; the precious pod, created once the filler runs, lands beside it (created
	// together, the two pods may reach the provisioner in two batches and get a node each).
	filler := framework.Deployment(pool, "filler", pool, 1, "6", "1Gi")
	precious := framework.Deployment(pool, "precious", pool, 1, "500m", "1Gi")
	precious.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: protection.String()}
	if err := env.Client.Create(ctx, filler); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "filler"}, 1, 2*time.Minute)
	if err := env.Client.Create(ctx, precious); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "precious"}, 1, 2*time.Minute)
	only := func(app string) corev1.Pod {
		t.Helper()
		pods, err := env.Pods(ctx, pool, map[string]string{"app": app})
		if err != nil || len(pods) != 1 {
			t.Fatalf("%d %s pods: %v", len(pods), app, err)
		}
		return pods[0]
	}
	p, f := only("precious"), only("filler")
	if p.Spec.NodeName != f.Spec.NodeName || p.Status.StartTime == nil {
		t.Fatalf("precious pod on %q (start %v), filler on %q: want both on one node and a start time", p.Spec.NodeName, p.Status.StartTime, f.Spec.NodeName)
	}
	node, until := p.Spec.NodeName, p.Status.StartTime.Add(protection)
	if err := env.Client.Delete(ctx, filler); err != nil {
		t.Fatal(err)
	}
	// Until the minute is over the node stays (a 0.5-cpu pod on an m5.2xlarge: consolidation wants to replace it).
	err := framework.Consistently(ctx, time.Until(until)-2*time.Second, time.Second, func(ctx context.Context) error {
		cur := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&p), cur); err != nil {
			return err
		}
		if cur.DeletionTimestamp != nil || cur.Spec.NodeName != node {
			return fmt.Errorf("pod disrupted %s before its do-not-disrupt %s ended", time.Until(until).Round(time.Second), protection)
		}
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return err
		}
		for _, c := range claims {
			if c.Status.NodeName == node && c.DeletionTimestamp != nil {
				return fmt.Errorf("nodeclaim %s deleted %s before the pod's do-not-disrupt %s ended", c.Name, time.Until(until).Round(time.Second), protection)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, env.LogTail("dovetail", 20))
	}
	// Then consolidation replaces the node and the pod runs elsewhere.
	var moved time.Duration
	err = framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "precious"})
		if err != nil {
			return false, "", err
		}
		for _, cur := range pods {
			if cur.Status.Phase == corev1.PodRunning && cur.Spec.NodeName != node && cur.DeletionTimestamp == nil {
				moved = time.Since(until)
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d precious pods, none running off %s", len(pods), node), nil
	})
	if err != nil {
		t.Fatalf("after the do-not-disrupt ended: %v\n%s", err, env.LogTail("dovetail", 30))
	}
	t.Logf("protection ended at %s; the pod ran on the replacement %s later", until.UTC().Format(time.RFC3339), moved.Round(time.Second))
	events, err := env.Events(ctx, pool, "Pod", p.Name)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events {
		found = found || strings.HasPrefix(e, "DoNotDisruptUntil: ")
	}
	if !found {
		t.Errorf("no DoNotDisruptUntil event on the pod; events: %q", events)
	}
}
