//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/doctor"
	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/operator"
	"github.com/dovetail/dovetail/test/e2e/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKarpenterHoldsLeaderLease: Dovetail replaces a Karpenter that still runs. The stack's controller (which runs
// without leader election) is stopped; a Karpenter identity takes the shared Lease karpenter-leader-election in
// the controller's namespace and keeps renewing it; a Dovetail replica with leader election starts. While the
// Lease is renewed, 30 pending pods get no NodeClaim, and the reason is visible: the replica's metric, an event on
// the Lease, `dovetailctl explain pod` and `dovetailctl doctor`. Karpenter then shuts down, releasing the Lease as
// it does on cancel: the replica takes the Lease under a Dovetail identity and the 30 pods run.
func TestKarpenterHoldsLeaderLease(t *testing.T) {
	ctx := context.Background()
	const (
		pool    = "leaderlease"
		ns      = "kube-system" // the controller's namespace (POD_NAMESPACE is not set on the stack)
		holder  = "karpenter-7d9c5b6f4-x2x9q_0b1e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"
		pods    = 30
		waitFor = 30 * time.Second
	)
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Fatalf("%s: %v (run make build first)", ctl, err)
	}
	// Cleanups run last first: the replica goes, the Lease goes, the stack's controller comes back, then the
	// pool's cleanup (which needs a controller) runs.
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}})
	// The pool is ready before the controller goes: a waiting replica writes no status, so a readiness the
	// stopped controller computed before it saw the EC2NodeClass (NodeClassNotFound) would stay.
	if err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		np := &karpv1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return false, "", err
		}
		return np.IsTrue(karpv1.ConditionTypeReady), fmt.Sprintf("nodepool %s conditions %+v", pool, np.Status.Conditions), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.KillController(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.StartController(context.Background()); err != nil {
			t.Errorf("restarting the stack's controller: %v", err)
		}
	})

	// Karpenter: holds the Lease and renews it every 2 s (its retry period) until it shuts down.
	leases := env.Kube.CoordinationV1().Leases(ns)
	_ = leases.Delete(ctx, leaderlease.DefaultName, metav1.DeleteOptions{})
	now := metav1.NewMicroTime(time.Now())
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaderlease.DefaultName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	renewCtx, stopRenewing := context.WithTimeout(ctx, 10*time.Minute)
	var renewing sync.WaitGroup
	renewing.Add(1)
	go func() {
		defer renewing.Done()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-tick.C:
			}
			l, err := leases.Get(renewCtx, leaderlease.DefaultName, metav1.GetOptions{})
			if err != nil || leaderlease.HolderOf(l) != holder {
				continue
			}
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
			_, _ = leases.Update(renewCtx, l, metav1.UpdateOptions{})
		}
	}()
	shutdownKarpenter := func() {
		stopRenewing()
		renewing.Wait()
	}
	t.Cleanup(func() {
		shutdownKarpenter()
		if err := leases.Delete(context.Background(), leaderlease.DefaultName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the lease: %v", err)
		}
	})

	metricsPort, healthPort := env.PortBase+90, env.PortBase+91
	replica, err := env.StartReplica(ctx, "dovetail-lease", metricsPort, healthPort, "DISABLE_LEADER_ELECTION=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Kill)
	replicaLog := func() string {
		b, _ := os.ReadFile(replica.LogPath)
		return string(b)
	}

	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, pods, "500m", "256Mi")); err != nil {
		t.Fatal(err)
	}

	// Nothing is provisioned while Karpenter renews the Lease.
	start := time.Now()
	if err := framework.Consistently(ctx, waitFor, 2*time.Second, func(ctx context.Context) error {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return err
		}
		if len(claims) > 0 {
			return fmt.Errorf("%d NodeClaims created %s after the pods while Karpenter holds the lease", len(claims), time.Since(start).Round(time.Second))
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\nreplica log (tail):\n%s", err, tail(replicaLog(), 30))
	}

	// The reason is visible: metric, event on the Lease, log line, explain and doctor.
	body, err := scrape(ctx, metricsPort)
	if err != nil {
		t.Fatal(err)
	}
	if want := `dovetail_leader_election_waiting{holder_kind="karpenter"} 1`; !strings.Contains(body, want) {
		t.Errorf("the replica's metrics lack %s", want)
	}
	events, err := env.Events(ctx, ns, "Lease", leaderlease.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	waiting := 0
	for _, e := range events {
		if strings.HasPrefix(e, operator.ReasonWaitingForLeaderLease+": ") && strings.Contains(e, holder) {
			waiting++
		}
	}
	if waiting != 1 {
		t.Errorf("%d %s events on the lease, want 1: %q", waiting, operator.ReasonWaitingForLeaderLease, events)
	}
	if n := strings.Count(replicaLog(), "Karpenter holds the leader lease; Dovetail waits and neither provisions nor disrupts until it lapses"); n != 1 {
		t.Errorf("the replica logged the wait %d times, want once", n)
	}
	podList, err := env.Pods(ctx, pool, map[string]string{"app": "app"})
	if err != nil || len(podList) == 0 {
		t.Fatalf("pods: %d (%v)", len(podList), err)
	}
	out := runCtl(t, ctl, "explain", "pod", pool+"/"+podList[0].Name)
	if want := "Dovetail is not leading: Karpenter holds the leader lease " + ns + "/" + leaderlease.DefaultName + " (holder " + holder; !strings.Contains(out, want) {
		t.Errorf("explain pod lacks %q:\n%s", want, out)
	}
	report, _ := runDoctor(t, ctl)
	if got := report.Get("migration-leader-lease"); len(got) != 1 || got[0].Status != doctor.Warn || !strings.Contains(got[0].Message, "Dovetail shares this lease and waits") {
		t.Errorf("doctor's migration-leader-lease: %+v", got)
	}

	// Karpenter shuts down and releases the Lease: Dovetail takes it and provisions.
	shutdownKarpenter()
	l, err := leases.Get(ctx, leaderlease.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = nil
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	if err := framework.Poll(ctx, time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		l, err := leases.Get(ctx, leaderlease.DefaultName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		h := leaderlease.HolderOf(l)
		return leaderlease.IsDovetail(h), "holder " + h, nil
	}); err != nil {
		t.Fatalf("the replica did not take the released lease: %v\nreplica log (tail):\n%s", err, tail(replicaLog(), 30))
	}
	t.Logf("the replica took the lease %s after Karpenter released it", time.Since(released).Round(100*time.Millisecond))
	waitRunning(t, pool, map[string]string{"app": "app"}, pods, 5*time.Minute)
	if body, err := scrape(ctx, metricsPort); err != nil || !strings.Contains(body, `dovetail_leader_election_waiting{holder_kind="karpenter"} 0`) {
		t.Errorf("the waiting metric did not drop to 0 (%v)", err)
	}
	if !strings.Contains(replicaLog(), "Karpenter no longer holds the leader lease") {
		t.Error("the replica did not log the lapse")
	}
}

func scrape(ctx context.Context, port int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
