//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// startZonalShift starts an ARC zonal shift of the cluster away from the zone ID (the simulator's admin API) and
// returns its ID.
func startZonalShift(ctx context.Context, t *testing.T, zoneID string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"awayFrom": zoneID, "expiresIn": "1h", "comment": "e2e"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.AWSEndpoint+"/_awssim/zonal-shifts", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID string `json:"zonalShiftId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.ID == "" {
		t.Fatalf("starting a zonal shift away from %s: HTTP %d, %v", zoneID, resp.StatusCode, err)
	}
	return out.ID
}

// waitNodePoolEvent waits until the NodePool has an event whose "reason: message" contains want.
func waitNodePoolEvent(ctx context.Context, t *testing.T, pool, want string, timeout time.Duration) {
	t.Helper()
	err := framework.Poll(ctx, timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		events, err := env.Events(ctx, corev1.NamespaceDefault, "NodePool", pool)
		if err != nil {
			return false, "", err
		}
		return strings.Contains(strings.Join(events, "\n"), want), fmt.Sprintf("events %q", events), nil
	})
	if err != nil {
		t.Fatalf("waiting for NodePool %s event %q: %v\n%s", pool, want, err, env.LogTail("dovetail", 20))
	}
}

// TestZonalShiftMovesLaunchesOutOfTheZone (ENABLE_ZONAL_SHIFT=true): while ARC shifts traffic away from a zone,
// the NodePool gets ZonalShiftActive, a pod that may go anywhere gets a node in another zone and a pod that can only
// go to the shifted zone stays pending; once the shift is cancelled, ZonalShiftCleared is published and the pending
// pod gets a node in that zone.
func TestZonalShiftMovesLaunchesOutOfTheZone(t *testing.T) {
	ctx := context.Background()
	const pool = "zonalshift"
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never"})
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	// The shifted zone: the first zone of the node class's subnets.
	var zone, zoneID string
	err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: np.Spec.Template.Spec.NodeClassRef.Name}, nc); err != nil {
			return false, "", err
		}
		if len(nc.Status.Subnets) < 2 {
			return false, fmt.Sprintf("%d subnets resolved", len(nc.Status.Subnets)), nil
		}
		zone, zoneID = nc.Status.Subnets[0].Zone, nc.Status.Subnets[0].ZoneID
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	shiftID := startZonalShift(ctx, t, zoneID)
	shiftEnded := false
	t.Cleanup(func() {
		if !shiftEnded {
			_ = env.SimAdmin(context.Background(), http.MethodDelete, "zonal-shifts/"+shiftID, nil)
		}
	})
	start := time.Now()
	waitNodePoolEvent(ctx, t, pool, fmt.Sprintf("ZonalShiftActive: Zonal shift detected: offerings in zone %s (%s)", zone, zoneID), 45*time.Second)
	t.Logf("ZonalShiftActive for %s (%s) after %s", zone, zoneID, time.Since(start).Round(time.Second))

	anywhere := framework.Deployment(pool, "anywhere", pool, 1, "1", "1Gi")
	pinned := framework.Deployment(pool, "pinned", pool, 1, "1", "1Gi")
	pinned.Spec.Template.Spec.NodeSelector[corev1.LabelTopologyZone] = zone
	for _, d := range []client.Object{anywhere, pinned} {
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, pool, map[string]string{"app": "anywhere"}, 1, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.Labels[corev1.LabelTopologyZone] == zone {
			t.Errorf("nodeclaim %s launched in the shifted zone %s", c.Name, zone)
		}
	}
	pods, err := env.Pods(ctx, pool, map[string]string{"app": "pinned"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s pinned to the shifted zone was bound to %s during the shift", p.Name, p.Spec.NodeName)
		}
	}

	if err := env.SimAdmin(ctx, http.MethodDelete, "zonal-shifts/"+shiftID, nil); err != nil {
		t.Fatal(err)
	}
	shiftEnded = true
	ended := time.Now()
	waitNodePoolEvent(ctx, t, pool, fmt.Sprintf("ZonalShiftCleared: Zonal shift cleared: offerings in zone %s (%s)", zone, zoneID), 45*time.Second)
	waitRunning(t, pool, map[string]string{"app": "pinned"}, 1, 2*time.Minute)
	t.Logf("shift cancelled: the pinned pod runs %s later", time.Since(ended).Round(time.Second))
	claims, err = env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	inZone := 0
	for _, c := range claims {
		if c.Labels[corev1.LabelTopologyZone] == zone {
			inZone++
		}
	}
	if inZone != 1 {
		t.Errorf("%d nodeclaims in %s after the shift ended, want 1", inZone, zone)
	}
}
