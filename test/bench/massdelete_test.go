//go:build bench

package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestMassDeletion: 1,000 replicas two to a node on 500 on-demand m5.large nodes (DOVETAIL_BENCH_MASS_NODES
// changes the number of nodes; replicas stay twice that), under a
// PodDisruptionBudget with maxUnavailable 10%; every NodeClaim is deleted at once. It reports the seconds until
// every old instance is terminated and every old NodeClaim gone, counted from the deletion and from the last
// pod leaving an old node (the last eviction the budget allowed), the lowest availability seen by a watch (the
// budget allows 900), and the controller's memory. Targets: < 60 s after the last eviction, RSS < 200 MB.
// It fails when the budget is violated or the workload never converges.
func TestMassDeletion(t *testing.T) {
	ctx := context.Background()
	const pool = "massdelete"
	nodes, err := envInt("DOVETAIL_BENCH_MASS_NODES", 500)
	if err != nil {
		t.Fatal(err)
	}
	replicas := 2 * nodes
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"}})
	tracker, err := trackPods(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	tracker.expect(replicas)

	// m5.large has ~1.93 allocatable cores: with 700m per pod two replicas fit a node.
	labels := map[string]string{"app": "web"}
	applied := time.Now()
	if err := env.Client.Create(ctx, deployment(pool, "web", pool, pool, int32(replicas), "700m", "512Mi")); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &intstr.IntOrString{Type: intstr.String, StrVal: "10%"},
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitAllRunning(t, tracker, replicas, applied, 20*time.Minute)
	initial, _ := tracker.allRunning()
	t.Logf("%d replicas Running %.1fs after apply", replicas, initial.Sub(applied).Seconds())
	// The eviction API consults the budget's status: wait until the disruption controller counted every replica.
	minHealthy := replicas - (replicas+9)/10 // the budget rounds 10% up
	if err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		got := &policyv1.PodDisruptionBudget{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)
		return err == nil && got.Status.CurrentHealthy >= int32(replicas) && got.Status.DesiredHealthy == int32(minHealthy),
			fmt.Sprintf("pdb healthy %d desired %d", got.Status.CurrentHealthy, got.Status.DesiredHealthy), err
	}); err != nil {
		t.Fatal(err)
	}

	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) < nodes {
		t.Fatalf("expected at least %d nodeclaims for %d replicas of 700m on m5.large, got %d", nodes, replicas, len(claims))
	}
	oldClaims, oldNodes, oldInstances := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range claims {
		oldClaims[claims[i].Name] = true
		if claims[i].Status.NodeName != "" {
			oldNodes[claims[i].Status.NodeName] = true
		}
		if claims[i].Status.ProviderID != "" {
			oldInstances[framework.InstanceID(claims[i].Status.ProviderID)] = true
		}
	}

	stopMemory := controllerMemory(t)
	tracker.watchNodes(oldNodes)
	tracker.armMin()
	deleted := time.Now()
	if err := deleteAll(ctx, claims, 16); err != nil {
		t.Fatal(err)
	}
	deleteCalls := time.Since(deleted)
	t.Logf("deleted %d nodeclaims in %.1fs", len(claims), deleteCalls.Seconds())

	var done time.Time
	lastLog := time.Now()
	// Evictions of pods under one budget go through the API server about one every two seconds on the shared
	// 2-core machine (each retries its budget update while the others and the disruption controller change it),
	// so draining 1,000 pods takes half an hour there.
	err = framework.Poll(ctx, time.Hour, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		left, err := oldLeft(ctx, pool, oldClaims)
		if err != nil {
			return false, "", err
		}
		alive, err := liveInstances(ctx, oldInstances)
		if err != nil {
			return false, "", err
		}
		onOld, _ := tracker.liveOnWatched()
		_, running, available := tracker.counts()
		status := fmt.Sprintf("+%.0fs: %d old nodeclaims, %d old instances not terminated, %d pods on old nodes; %d Running, %d available",
			time.Since(deleted).Seconds(), left, alive, onOld, running, available)
		if time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			t.Log(status)
		}
		if left == 0 && alive == 0 {
			done = time.Now()
			return true, status, nil
		}
		return false, status, nil
	})
	memory := stopMemory()
	if err != nil {
		t.Fatalf("deleting %d nodeclaims: %v", len(claims), err)
	}
	_, lastEviction := tracker.liveOnWatched()
	if lastEviction.IsZero() { // no pod ever left an old node (there were none to drain)
		lastEviction = deleted
	}
	lowest, lowestAt := tracker.lowest()

	tracker.expect(replicas)
	waitAllRunning(t, tracker, replicas, deleted, 15*time.Minute)
	rerun, _ := tracker.allRunning()

	if lowest < minHealthy {
		t.Errorf("PodDisruptionBudget violated: availability dropped to %d at +%.1fs (maxUnavailable 10%% keeps %d)",
			lowest, lowestAt.Sub(deleted).Seconds(), minHealthy)
	}
	figures := map[string]any{
		"replicas":                     replicas,
		"nodeClaimsDeleted":            len(claims),
		"secondsDeleteCalls":           seconds(deleteCalls),
		"secondsDeleteToAllGone":       seconds(done.Sub(deleted)),
		"secondsDeleteToLastEviction":  seconds(lastEviction.Sub(deleted)),
		"secondsLastEvictionToAllGone": seconds(done.Sub(lastEviction)),
		"secondsDeleteToAllRunningNew": seconds(rerun.Sub(deleted)),
		"lowestAvailable":              lowest,
		"budgetMinAvailable":           minHealthy,
		"budgetViolated":               lowest < minHealthy,
		"secondsApplyToInitialRunning": seconds(initial.Sub(applied)),
	}
	for k, v := range memory {
		figures[k] = v
	}
	t.Logf("mass deletion of %d nodeclaims: all gone %.1fs after deletion, %.1fs after the last eviction (at +%.1fs); replacements all Running at +%.1fs",
		len(claims), seconds(done.Sub(deleted)), seconds(done.Sub(lastEviction)), seconds(lastEviction.Sub(deleted)), seconds(rerun.Sub(deleted)))
	t.Logf("lowest availability %d (budget keeps %d); controller memory: RSS %v MiB, peak %v MiB, sampled peak %v MiB",
		lowest, minHealthy, memory["controllerRSSMiB"], memory["controllerPeakRSSMiB"], memory["controllerSampledRSSMiB"])
	report(t, result{
		Name:    fmt.Sprintf("mass-deletion-%d-nodes", nodes),
		Figures: figures,
		Targets: map[string]any{"secondsLastEvictionToAllGone": "< 60", "controllerPeakRSSMiB": "< 200", "budgetViolated": false},
	})
}

// envInt reads a positive integer from the environment, or returns def when the variable is unset.
func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s must be a positive integer, got %q", name, v)
	}
	return n, nil
}

// waitAllRunning waits until the tracker has seen n pods Running, logging progress every 10 s, and fails the test
// after timeout.
func waitAllRunning(t *testing.T, tracker *podTracker, n int, since time.Time, timeout time.Duration) {
	t.Helper()
	if err := pollAllRunning(t, tracker, n, since, timeout, nil); err != nil {
		t.Fatal(err)
	}
}

// pollAllRunning waits until the tracker sees n pods Running, at most timeout, logging the count every 10 s and,
// when progress is given, what it describes every minute (a slow wait then shows what it waits on). When the count
// stays still for watchStallAfter, it lists the pods to check the watch (podTracker.resync) and logs what the list
// found that the watch had not delivered, with the API server's count of watchers it closed.
func pollAllRunning(t *testing.T, tracker *podTracker, n int, since time.Time, timeout time.Duration, progress func(context.Context) string) error {
	t.Helper()
	lastLog, lastProgress := time.Now(), time.Now()
	lastCount, lastMoved := -1, time.Now()
	err := framework.Poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		at, running := tracker.allRunning()
		status := fmt.Sprintf("%d/%d pods Running at +%.0fs", running, n, time.Since(since).Seconds())
		if time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			t.Log(status)
		}
		if progress != nil && at.IsZero() && time.Since(lastProgress) > time.Minute {
			lastProgress = time.Now()
			t.Logf("%s at +%.0fs", progress(ctx), time.Since(since).Seconds())
		}
		if running != lastCount {
			lastCount, lastMoved = running, time.Now()
		} else if at.IsZero() && time.Since(lastMoved) > watchStallAfter {
			lastMoved = time.Now()
			checkWatch(ctx, t, tracker)
		}
		return !at.IsZero(), status, nil
	})
	if err != nil {
		return fmt.Errorf("%d pods not all Running within %s: %w", n, timeout, err)
	}
	return nil
}

// watchStallAfter is how long the Running count may stay still before the pod watch is checked against a list.
const watchStallAfter = 2 * time.Minute

// checkWatch compares the tracker's watch with a list of the pods and applies what the list shows, logging the
// difference: nothing differing means the pods are really not Running; pods differing mean the watch lost or
// delayed their events.
func checkWatch(ctx context.Context, t *testing.T, tracker *podTracker) {
	t.Helper()
	quiet := tracker.sinceLastEvent()
	listCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	started := time.Now()
	differed, running, err := tracker.resync(listCtx)
	if err != nil {
		t.Logf("pod watch check: the count stood still for %s (last watch event %.0f s ago); %v", watchStallAfter, quiet.Seconds(), err)
		return
	}
	t.Logf("pod watch check: the count stood still for %s (last watch event %.0f s ago); a list (%.1f s) found %d pods "+
		"whose state the watch had not delivered, %d of them Running; the API server closed watchers: %s",
		watchStallAfter, quiet.Seconds(), time.Since(started).Seconds(), differed, running, terminatedWatchers(listCtx))
}

// terminatedWatchers returns the API server's counts of watchers it closed because they did not keep up
// (apiserver_terminated_watchers_total, by resource), or why they could not be read.
func terminatedWatchers(ctx context.Context) string {
	m, err := env.ScrapeAPIServer(ctx)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	series, err := m.Series("apiserver_terminated_watchers_total")
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if len(series) == 0 {
		return "none"
	}
	var out []string
	for _, labels := range slices.Sorted(maps.Keys(series)) {
		out = append(out, fmt.Sprintf("{%s} %.0f", labels, series[labels]))
	}
	return strings.Join(out, ", ")
}

// deleteAll deletes the NodeClaims with a few workers, as a user's `kubectl delete nodeclaims --all` would.
func deleteAll(ctx context.Context, claims []karpv1.NodeClaim, workers int) error {
	work := make(chan *karpv1.NodeClaim)
	errs := make(chan error, len(claims))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if err := env.Client.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
					errs <- fmt.Errorf("deleting nodeclaim %s: %w", c.Name, err)
				}
			}
		}()
	}
	for i := range claims {
		work <- &claims[i]
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs // nil when the channel is empty
}

// oldLeft counts the NodeClaims of the pool that are in old.
func oldLeft(ctx context.Context, pool string, old map[string]bool) (int, error) {
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range claims {
		if old[claims[i].Name] {
			n++
		}
	}
	return n, nil
}

// liveInstances counts the instances in ids that the simulator does not report terminated (or has forgotten).
func liveInstances(ctx context.Context, ids map[string]bool) (int, error) {
	var all []string
	for id := range ids {
		all = append(all, id)
	}
	n := 0
	for start := 0; start < len(all); start += 200 {
		chunk := all[start:min(start+200, len(all))]
		states, err := env.InstanceStates(ctx, chunk...)
		if err != nil {
			return 0, err
		}
		for _, id := range chunk {
			if s, ok := states[id]; ok && s != "terminated" {
				n++
			}
		}
	}
	return n, nil
}
