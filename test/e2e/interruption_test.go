//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// waitEvent waits until an event on the cluster-scoped object (kind, name) starts with prefix and returns it.
func waitEvent(t *testing.T, kind, name, prefix string, timeout time.Duration) string {
	t.Helper()
	var found string
	err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		events, err := env.Events(ctx, "default", kind, name)
		if err != nil {
			return false, "", err
		}
		for _, e := range events {
			if strings.HasPrefix(e, prefix) {
				found = e
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("events %q", events), nil
	})
	if err != nil {
		t.Fatalf("waiting for a %s event on %s %s: %v", prefix, kind, name, err)
	}
	return found
}

// TestInterruptionSpotDrains: a spot interruption warning for a NodePool with the default policy deletes the
// NodeClaim at once; the node is drained, a replacement launches and the Deployment's pod runs on another node.
func TestInterruptionSpotDrains(t *testing.T) {
	ctx := context.Background()
	const pool = "spot-drain"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{karpv1.CapacityTypeSpot}})
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	start := time.Now()
	if err := env.SendInterruptionEvent(ctx, framework.InterruptionEvent{Kind: "spot-interruption",
		InstanceID: framework.InstanceID(claim.Status.ProviderID)}); err != nil {
		t.Fatal(err)
	}
	t.Logf("event: %s", waitEvent(t, "NodeClaim", claim.Name, interruption.ReasonSpotInterrupted+": ", 45*time.Second))
	// The pod runs on a replacement within seconds (3 s here), well before EC2 reclaims the old instance 2 minutes
	// after the warning. The deadline stays under those 2 minutes: a provisioner that counted the deleted NodeClaim
	// as capacity on its way waited for exactly that long.
	last := ""
	err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		old := &karpv1.NodeClaim{}
		err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, old)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		oldGone := apierrors.IsNotFound(err)
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "app"})
		if err != nil {
			return false, "", err
		}
		elsewhere := 0
		for _, p := range pods {
			if framework.PodAvailable(&p) && p.Spec.NodeName != "" && p.Spec.NodeName != claim.Status.NodeName {
				elsewhere++
			}
		}
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		status := fmt.Sprintf("old nodeclaim gone %v (deleting %v), %d nodeclaims, %d available pods on another node",
			oldGone, !oldGone && old.DeletionTimestamp != nil, len(claims), elsewhere)
		if status != last {
			t.Logf("%.1fs: %s", time.Since(start).Seconds(), status)
			last = status
		}
		return oldGone && elsewhere == 1, status, nil
	})
	if err != nil {
		t.Fatalf("after the spot interruption: %v", err)
	}
	t.Logf("nodeclaim %s replaced and the pod running elsewhere %.1fs after the warning", claim.Name, time.Since(start).Seconds())
}

// TestInterruptionSpotIgnore: with dovetail.sh/spot-interruption: Ignore the warning only records an event; the
// NodeClaim stays until the instance is reclaimed, then the out-of-band termination path removes it.
func TestInterruptionSpotIgnore(t *testing.T) {
	ctx := context.Background()
	const pool = "spot-ignore"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{karpv1.CapacityTypeSpot},
		Annotations: map[string]string{interruption.SpotInterruptionAnnotation: string(interruption.SpotIgnore)}})
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	start := time.Now()
	if err := env.SendInterruptionEvent(ctx, framework.InterruptionEvent{Kind: "spot-interruption",
		InstanceID: framework.InstanceID(claim.Status.ProviderID), TerminateAfter: "40s"}); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, "NodeClaim", claim.Name, interruption.ReasonSpotInterrupted+": ", 30*time.Second)
	if !strings.Contains(ev, interruption.SpotInterruptionAnnotation+"=Ignore") {
		t.Errorf("event %q does not name the Ignore policy", ev)
	}
	err := framework.Consistently(ctx, 5*time.Second, time.Second, func(ctx context.Context) error {
		nc := &karpv1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc); err != nil {
			return err
		}
		if nc.DeletionTimestamp != nil {
			return fmt.Errorf("nodeclaim %s is being deleted despite %s=Ignore", claim.Name, interruption.SpotInterruptionAnnotation)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, &karpv1.NodeClaim{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "nodeclaim still there", err
	})
	if err != nil {
		t.Fatalf("after the instance was reclaimed: %v", err)
	}
	t.Logf("nodeclaim %s removed %.1fs after the warning (instance reclaimed after 40s)", claim.Name, time.Since(start).Seconds())
}

// TestInterruptionScheduledChangeDrainsBeforeStart: an AWS Health scheduled change on a NodePool that opts into
// dovetail.sh/scheduled-change: DrainBeforeStart records the drain time (start minus the 30 s
// terminationGracePeriod) on the NodeClaim, keeps the node until then, and deletes the NodeClaim when that time
// comes.
func TestInterruptionScheduledChangeDrainsBeforeStart(t *testing.T) {
	ctx := context.Background()
	const pool = "health"
	setupPool(t, pool, framework.PoolOptions{TerminationGracePeriod: "30s",
		Annotations: map[string]string{interruption.ScheduledChangeAnnotation: string(interruption.ScheduledDrainBeforeStart)}})
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	start := time.Now().Add(50 * time.Second).Truncate(time.Second)
	drainAt := start.Add(-30 * time.Second)
	if err := env.SendInterruptionEvent(ctx, framework.InterruptionEvent{Kind: "health",
		InstanceID: framework.InstanceID(claim.Status.ProviderID), StartTime: &start}); err != nil {
		t.Fatal(err)
	}
	t.Logf("event: %s", waitEvent(t, "NodeClaim", claim.Name, interruption.ReasonScheduledChange+": ", 30*time.Second))
	nc := &karpv1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc); err != nil {
		t.Fatal(err)
	}
	if got, want := nc.Annotations[interruption.DeleteAtAnnotation], drainAt.UTC().Format(time.RFC3339); got != want {
		t.Errorf("%s = %q, want %s (start minus terminationGracePeriod)", interruption.DeleteAtAnnotation, got, want)
	}
	if until := time.Until(drainAt) - 2*time.Second; until > 0 {
		err := framework.Consistently(ctx, until, time.Second, func(ctx context.Context) error {
			nc := &karpv1.NodeClaim{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc); err != nil {
				return err
			}
			if nc.DeletionTimestamp != nil {
				return fmt.Errorf("nodeclaim %s deleted before its drain time %s", claim.Name, drainAt.Format(time.RFC3339))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		nc := &karpv1.NodeClaim{}
		err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return err == nil && nc.DeletionTimestamp != nil, "nodeclaim not yet being deleted", err
	})
	if err != nil {
		t.Fatalf("at the drain time: %v", err)
	}
	t.Logf("nodeclaim %s deletion began %.1fs after its drain time", claim.Name, time.Since(drainAt).Seconds())
}
