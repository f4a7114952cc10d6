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

	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDRARequestsIgnoredByDefault: with IGNORE_DRA_REQUESTS at its default (true, as in Karpenter), a pod that
// claims a GPU through a ResourceClaimTemplate gets no node: it stays Pending, with a FailedScheduling event
// naming the reason, and its NodePool gets no NodeClaim.
func TestDRARequestsIgnoredByDefault(t *testing.T) {
	const pool = "draignored"
	setupPool(t, pool, framework.PoolOptions{})
	ctx := context.Background()
	tmpl := framework.ClaimTemplate(pool, "gpu", "", framework.DeviceRequest{Name: "gpu", Class: "gpu.nvidia.com", Count: 1})
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	d := framework.Deployment(pool, "claims", pool, 1, "100m", "128Mi")
	framework.UseClaimTemplate(&d.Spec.Template.Spec, tmpl.Name)
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	want := "FailedScheduling: Failed to find capacity: " + provisioning.ReasonDRARequests
	err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "claims"})
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), err
		}
		pod = pods[0]
		events, err := env.Events(ctx, pool, "Pod", pod.Name)
		for _, e := range events {
			if e == want {
				return true, "", err
			}
		}
		return false, "events: " + strings.Join(events, "; "), err
	})
	if err != nil {
		t.Fatalf("event on the claim pod: %v", err)
	}
	// A pass or two later, still nothing.
	err = framework.Consistently(ctx, 5*time.Second, time.Second, func(ctx context.Context) error {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&pod), p); err != nil {
			return err
		}
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("pod %s is %s on %q, want Pending and unbound", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return err
		}
		if len(claims) != 0 {
			return fmt.Errorf("pool %s has %d NodeClaims, want none", pool, len(claims))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
