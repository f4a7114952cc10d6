//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// scaleOutMix is the workload of TestScaleOut: 1,000 pods in five Deployments of different shapes (250m to 2
// cores, 256Mi to 4Gi), 1,050 cores and 2.1 TiB requested in all.
var scaleOutMix = []struct {
	name        string
	replicas    int32
	cpu, memory string
}{
	{"tiny", 200, "250m", "256Mi"},
	{"small", 200, "500m", "1Gi"},
	{"medium", 200, "1", "1536Mi"},
	{"large", 200, "1500m", "3Gi"},
	{"xlarge", 200, "2", "4Gi"},
}

// TestScaleOut: 1,000 pending pods with mixed requests on the example NodePool (c/m/r, spot and
// on-demand). It reports the seconds from creating the Deployments until every pod is Running, and from the
// batch closing (the first NodeClaim's creation) until every pod is Running; the nodes launched; the share of
// their allocatable cpu and memory that the pods request; the controller's memory; the hourly cost.
// Targets: all Running < 20 s after the batch closes, cpu utilisation > 85%, controller RSS < 150 MB.
func TestScaleOut(t *testing.T) {
	ctx := context.Background()
	const pool = "scaleout"
	total := 0
	for _, m := range scaleOutMix {
		total += int(m.replicas)
	}
	tracker := trackedPool(t, pool, framework.PoolOptions{}, total)
	stopMemory := controllerMemory(t)
	fleetsBefore, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}

	applied := time.Now()
	for _, m := range scaleOutMix {
		if err := env.Client.Create(ctx, deployment(pool, m.name, pool, pool, m.replicas, m.cpu, m.memory)); err != nil {
			t.Fatal(err)
		}
	}
	var firstSeen time.Time
	lastLog := time.Now()
	err = framework.Poll(ctx, 15*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		if firstSeen.IsZero() {
			claims, err := env.NodeClaims(ctx, pool)
			if err != nil {
				return false, "", err
			}
			if len(claims) > 0 {
				firstSeen = time.Now()
			}
		}
		at, running := tracker.allRunning()
		status := fmt.Sprintf("%d/%d pods Running after %.0fs", running, total, time.Since(applied).Seconds())
		if time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			if p, err := framework.GetProgress(ctx, env.Client, pool, nil); err == nil {
				t.Logf("+%3.0fs %s", time.Since(applied).Seconds(), p)
			}
		}
		return !at.IsZero(), status, nil
	})
	if err != nil {
		t.Fatalf("%d pods never all Running: %v", total, err)
	}
	allCreated, allBound, allRunning := tracker.milestones()
	memory := stopMemory()

	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	batchClosed := firstNodeClaimCreated(claims)
	lastClaim, lastInitialized := lastNodeClaimTimes(claims)
	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem, err := utilisation(ctx, pool, pool)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := framework.Summarize(ctx, env.Client, framework.Region)
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, g := range summary.Groups {
		table = append(table, fmt.Sprintf("%s/%s/%s×%d", g.InstanceType, g.Zone, g.CapacityType, g.Count))
	}

	fleets, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]any{
		"createFleetCalls":             fleets - fleetsBefore,
		"pods":                         total,
		"secondsApplyToAllRunning":     seconds(allRunning.Sub(applied)),
		"secondsBatchToAllRunning":     seconds(allRunning.Sub(batchClosed)),
		"secondsApplyToFirstClaim":     seconds(batchClosed.Sub(applied)),
		"secondsApplyToFirstClaimObs":  seconds(firstSeen.Sub(applied)),
		"secondsApplyToLastClaim":      seconds(lastClaim.Sub(applied)),
		"secondsApplyToAllInitialized": seconds(lastInitialized.Sub(applied)),
		"secondsApplyToAllPodsCreated": seconds(allCreated.Sub(applied)),
		"secondsApplyToAllBound":       seconds(allBound.Sub(applied)),
		"nodeClaims":                   len(claims),
		"nodes":                        len(nodes),
		"cpuUtilisation":               round3(cpu),
		"memoryUtilisation":            round3(mem),
		"hourlyCostUSD":                round3(summary.HourlyCost),
		"nodeGroups":                   table,
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("scale-out of %d pods: all Running %.1fs after apply, %.1fs after the batch closed (first NodeClaim at +%.1fs)",
		total, seconds(allRunning.Sub(applied)), seconds(allRunning.Sub(batchClosed)), seconds(batchClosed.Sub(applied)))
	t.Logf("milestones after apply: pods all created +%.1fs, last NodeClaim +%.1fs, all NodeClaims Initialized +%.1fs, pods all bound +%.1fs",
		seconds(allCreated.Sub(applied)), seconds(lastClaim.Sub(applied)), seconds(lastInitialized.Sub(applied)), seconds(allBound.Sub(applied)))
	t.Logf("%d CreateFleet calls for %d NodeClaims", fleets-fleetsBefore, len(claims))
	t.Logf("%d NodeClaims, %d nodes; requested/allocatable cpu %.1f%%, memory %.1f%%; $%.2f/hour",
		len(claims), len(nodes), 100*cpu, 100*mem, summary.HourlyCost)
	t.Logf("controller memory: RSS %v MiB, peak (VmHWM) %v MiB, sampled peak %v MiB",
		memory["controllerRSSMiB"], memory["controllerPeakRSSMiB"], memory["controllerSampledRSSMiB"])
	report(t, result{
		Name:    "scale-out-1000-pods",
		Figures: figures,
		Targets: map[string]any{"secondsBatchToAllRunning": "< 20", "cpuUtilisation": "> 0.85", "controllerPeakRSSMiB": "< 150"},
	})
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// createFleetCalls reads how many CreateFleet calls the simulator has answered (its state's per-action counts).
func createFleetCalls(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.AWSEndpoint+"/_awssim/state", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading simulator state: %w", err)
	}
	defer resp.Body.Close()
	var st struct {
		Calls map[string]int `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("decoding simulator state: %w", err)
	}
	return st.Calls["CreateFleet"], nil
}
