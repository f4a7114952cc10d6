//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// leaseName is the Lease the controller's replicas compete for (LEADER_ELECTION_NAME's default, Karpenter's
// Lease), in kube-system (the default POD_NAMESPACE).
const leaseName = leaderlease.DefaultName

func holder(ctx context.Context) (*coordinationv1.Lease, string, error) {
	l, err := env.Kube.CoordinationV1().Leases("kube-system").Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	if l.Spec.HolderIdentity == nil {
		return l, "", nil
	}
	return l, *l.Spec.HolderIdentity, nil
}

// TestLeaderElection runs two controller replicas with leader election in place of the stack's controller,
// SIGKILLs the leader while a scale-out's launches are in flight, and checks that the other replica takes the
// Lease within the lease duration (plus one retry period) and finishes the scale-out without launching any
// NodeClaim twice, leaking or orphaning anything.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	const lpool, lns = "leader", "leader"
	if _, err := env.KillController(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.StartController(context.Background()); err != nil {
			t.Errorf("restarting the stack's controller: %v", err)
		}
	})
	replica := func(name string, offset int) *framework.Replica {
		r, err := env.StartReplica(ctx, name, env.PortBase+offset, env.PortBase+offset+1, "DISABLE_LEADER_ELECTION=false")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Kill)
		return r
	}
	a := replica("dovetail-a", 90)
	var first string
	if err := framework.Poll(ctx, 2*time.Minute, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		_, h, err := holder(ctx)
		first = h
		return err == nil && h != "", "holder " + h, err
	}); err != nil {
		t.Fatalf("replica a never took the lease: %v", err)
	}
	b := replica("dovetail-b", 92)

	if err := framework.EnsureNamespace(ctx, env.Client, lns); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(lpool, framework.PoolOptions{
		InstanceTypes: []string{"m5.large", "m5.xlarge", "c5.xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "5s", Budgets: []map[string]any{{"nodes": "100%"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	before, err := launches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 24 pods of 1.5 CPU: one or two per instance, so a dozen or more launches.
	if err := env.Client.Create(ctx, framework.Deployment(lns, "app", lpool, 24, "1500m", "1Gi")); err != nil {
		t.Fatal(err)
	}
	f, waited := aim(ctx, "scale-out", 0, 0)
	a.Kill()
	killed := time.Now()
	var took time.Duration
	var second string
	lease, _, err := holder(ctx) // as the dead leader last renewed it
	if err != nil {
		t.Fatal(err)
	}
	var taken *coordinationv1.Lease
	if err := framework.Poll(ctx, 2*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		l, h, err := holder(ctx)
		if err == nil && h != "" && h != first {
			second, took, taken = h, time.Since(killed), l
			return true, "", nil
		}
		if err == nil && h == first {
			lease = l
		}
		return false, "holder " + h, err
	}); err != nil {
		t.Fatalf("no replica took the lease over after the leader's kill: %v", err)
	}
	leaseDuration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	// From the dead leader's last renewal to the new holder's acquisition, as the Lease records them.
	expired := taken.Spec.AcquireTime.Sub(lease.Spec.RenewTime.Time)
	fmt.Printf("leader: killed %s %.1fs after the scale-out (in flight: %s); %s took the lease %.1fs after the kill, %.1fs after the last renewal (lease duration %s)\n",
		first, waited.Seconds(), f, second, took.Seconds(), expired.Seconds(), leaseDuration)
	if !f.launch {
		t.Errorf("no launch was in flight when the leader was killed")
	}
	// The survivor counts the lease duration from when it saw the last renewal and tries again every retry
	// period (2 s, jittered up to 2.4 s): it sees the renewal up to one period late and acts on the expiry up to
	// one period late, so the takeover comes at most the lease duration and two periods (4.8 s) after the last
	// renewal, plus the API server's latency (3 s allowed on a loaded machine; 30 rounds at load 10-20 measured
	// 19.3 s).
	if limit := leaseDuration + 8*time.Second; expired > limit {
		t.Errorf("takeover %s after the dead leader's last renewal, want at most %s", expired, limit)
	}

	// The new leader finishes the scale-out.
	var c check
	if err := framework.Poll(ctx, 6*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		var err error
		c, err = measureIn(ctx, lns)
		if err != nil {
			return false, "", err
		}
		ok := c.leaked == 0 && c.orphans == 0 && c.stuckPods == 0 && c.nodeClaims == c.instances && c.nodes == c.instances
		return ok, fmt.Sprintf("%+v", c), nil
	}); err != nil {
		t.Errorf("not quiescent after the takeover: %v", err)
	}
	after, err := launches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dupsBefore, _ := duplicateLaunches(before)
	dupsAfter, claims := duplicateLaunches(after)
	fmt.Printf("leader: launched=%d duplicates=%d leaked=%d orphans=%d stuck_pods=%d nodeclaims=%d\n",
		len(after)-len(before), dupsAfter-dupsBefore, c.leaked, c.orphans, c.stuckPods, claims)
	if dupsAfter != dupsBefore {
		t.Errorf("%d NodeClaims launched twice", dupsAfter-dupsBefore)
	}
	if len(after)-len(before) < 5 {
		t.Errorf("the scale-out launched %d instances, want at least 5", len(after)-len(before))
	}
	for _, r := range []*framework.Replica{a, b} {
		log, err := os.ReadFile(r.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(log), "panic:"); n > 0 {
			t.Errorf("%s logged %d panics", r.Name, n)
		}
	}

	// Leave the stack as found: no pods, no nodes of this pool.
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = lns, "app"
	if err := env.Client.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 3*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, lpool)
		return err == nil && len(claims) == 0, fmt.Sprintf("%d nodeclaims", len(claims)), err
	}); err != nil {
		t.Errorf("pool %s not emptied: %v", lpool, err)
	}
}
