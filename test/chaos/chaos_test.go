//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

const (
	pool     = "chaos"
	spotPool = "chaos-spot"
	// soloPool offers c5.large (one solo pod) and c5.2xlarge (six), at four times the price: five solo pods
	// arriving together get a c5.2xlarge, one left on it is moved by a consolidation replacement to a c5.large.
	soloPool = "chaos-solo"
	// ns holds every workload of the test.
	ns = "chaos"
)

// totals are the counts of the summary line.
type totals struct {
	rounds, leaked, orphans, duplicates, stuckPods, pdbViolations, dndEvictions, panics int
	kills, killsInFlight, killsInLaunch, killsInDisruption, killsInReplacement          int
	killsInConsolidationReplacement                                                     int
	launched                                                                            int
	minScaleOutLaunches                                                                 int
	weakScaleOuts                                                                       int
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// TestChaos runs CHAOS_ROUNDS rounds (default 3) of a random action (scale-out, scale-in, drift, spot
// interruption) with the controller SIGKILLed at an aimed moment (a launch or a disruption command in flight)
// and started again, then waits for quiescence and checks the cluster against the simulator. The last line of
// its output is `chaos: rounds=R leaked=L orphans=O duplicates=D stuck_pods=S pdb_violations=P panics=X`.
func TestChaos(t *testing.T) {
	rounds := envInt(t, "CHAOS_ROUNDS", 3)
	seed := uint64(envInt(t, "CHAOS_SEED", 1))
	rng := rand.New(rand.NewPCG(seed, seed))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	setup(t)
	pods := watchPods(t, ctx, ns)
	begin := time.Now()

	sum := totals{minScaleOutLaunches: -1}
	replicas := map[string]int32{"small": 0, "large": 3, "spotty": 2, "solo": 3}
	for r := 1; r <= rounds; r++ {
		roundStart := time.Now()
		before, err := launches(ctx)
		if err != nil {
			t.Fatal(err)
		}
		action := []string{"scale-out", "scale-out", "scale-in", "scale-in", "drift", "interrupt"}[rng.IntN(6)]
		if action == "interrupt" && !interrupt(t, rng) {
			action = "scale-out" // no spot node to interrupt yet
		}
		if action == "scale-out" && (replicas["large"] > 30 || replicas["small"] > 120) {
			// Near the caps a scale-out would launch little or nothing: scale in instead.
			action = "scale-in"
		}
		switch action {
		case "scale-out":
			// Relative to what runs now, so that every scale-out launches several instances (a large pod needs
			// most of an xlarge's CPU).
			replicas["small"] = min(replicas["small"]+int32(20+rng.IntN(41)), 150)
			replicas["large"] = min(replicas["large"]+int32(8+rng.IntN(13)), 40)
			replicas["spotty"] = int32(2 + rng.IntN(7))
			// From 3 (one per c5.large) to 8: the five new pods share a new c5.2xlarge.
			replicas["solo"] = 8
		case "scale-in":
			// The large pods stay at 3 or more so their budget (minAvailable 2) constrains every drain; the
			// nodes left underutilized are consolidated, by replacement when a smaller type fits their pods.
			replicas["small"] = int32(rng.IntN(10))
			replicas["large"] = int32(3 + rng.IntN(3))
			replicas["spotty"] = int32(1 + rng.IntN(2))
			// The ReplicaSet removes the pods of the most crowded node first: four of the c5.2xlarge's five, and
			// the one left there cannot move to a full c5.large, so a c5.large replaces the c5.2xlarge.
			replicas["solo"] = 3
		case "drift":
			drift(t, r)
		}
		for name, n := range replicas {
			scale(t, name, n)
		}
		// Half the scale-in and drift rounds wait 25 s for a replacement; the others take any command after 8 s,
		// before the quick ones (deleting empty nodes) are all done.
		acceptAfter := 25 * time.Second
		if rng.IntN(2) == 0 {
			acceptAfter = 8 * time.Second
		}
		f, waited := aim(ctx, action, time.Duration(rng.IntN(200))*time.Millisecond, acceptAfter)
		panics := countPanics(t)
		if _, err := env.KillController(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		sum.kills++
		if f.launch || f.disruption {
			sum.killsInFlight++
		}
		if f.launch {
			sum.killsInLaunch++
		}
		if f.disruption {
			sum.killsInDisruption++
		}
		// During a scale-out the uninitialized NodeClaims beside a tainted candidate may be the provisioner's, so
		// only scale-in (consolidation) and drift rounds count kills in a replacement.
		if f.replacement && (action == "scale-in" || action == "drift") {
			sum.killsInReplacement++
			if action == "scale-in" {
				sum.killsInConsolidationReplacement++
			}
		}
		if err := env.StartController(ctx); err != nil {
			t.Fatalf("round %d: restarting the controller: %v", r, err)
		}
		c := settle(t)
		c.panics = panics
		after, err := launches(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dupsBefore, _ := duplicateLaunches(before)
		dupsAfter, _ := duplicateLaunches(after)
		c.duplicates = dupsAfter - dupsBefore
		launchedNow := len(after) - len(before)
		launchedTypes := map[string]int{}
		for _, l := range after[len(before):] {
			launchedTypes[l.Type]++
		}
		sum.launched += launchedNow
		if action == "scale-out" && (sum.minScaleOutLaunches < 0 || launchedNow < sum.minScaleOutLaunches) {
			sum.minScaleOutLaunches = launchedNow
		}
		if action == "scale-out" && launchedNow < 5 {
			sum.weakScaleOuts++
		}
		pdb, dnd, _, _ := pods.counts()
		sum.rounds++
		sum.leaked += c.leaked
		sum.orphans += c.orphans
		sum.duplicates += c.duplicates
		sum.stuckPods += c.stuckPods
		sum.panics += c.panics
		fmt.Printf("chaos round %d: %s, kill after %.1fs in flight: %s; launched=%v leaked=%d orphans=%d duplicates=%d stuck_pods=%d pdb_violations=%d dnd_evictions=%d panics=%d nodeclaims=%d instances=%d nodes=%d (%.0fs)\n",
			r, action, waited.Seconds(), f, launchedTypes, c.leaked, c.orphans, c.duplicates, c.stuckPods, pdb, dnd, c.panics,
			c.nodeClaims, c.instances, c.nodes, time.Since(roundStart).Seconds())
	}
	sum.panics += countPanics(t)
	pdb, dnd, evictions, details := pods.counts()
	sum.pdbViolations, sum.dndEvictions = pdb+dnd, dnd
	for _, d := range details {
		fmt.Printf("chaos: violation: %s\n", d)
	}
	fmt.Printf("chaos: %.0fs, instances launched=%d (fewest in a scale-out round: %d; scale-out rounds with fewer than 5: %d), voluntary evictions=%v, do-not-disrupt evictions=%d\n",
		time.Since(begin).Seconds(), sum.launched, sum.minScaleOutLaunches, sum.weakScaleOuts, evictions, sum.dndEvictions)
	// in_flight counts a kill once even when it found both a launch and a disruption in flight.
	fmt.Printf("chaos: kills=%d in_flight=%d in_launch=%d in_disruption=%d in_replacement=%d in_consolidation_replacement=%d\n",
		sum.kills, sum.killsInFlight, sum.killsInLaunch, sum.killsInDisruption, sum.killsInReplacement, sum.killsInConsolidationReplacement)
	line := fmt.Sprintf("chaos: rounds=%d leaked=%d orphans=%d duplicates=%d stuck_pods=%d pdb_violations=%d panics=%d",
		sum.rounds, sum.leaked, sum.orphans, sum.duplicates, sum.stuckPods, sum.pdbViolations, sum.panics)
	fmt.Println(line)
	if sum.leaked+sum.orphans+sum.duplicates+sum.stuckPods+sum.pdbViolations+sum.panics > 0 {
		t.Errorf("%s", line)
	}
	if sum.rounds >= 10 && sum.killsInConsolidationReplacement == 0 {
		t.Errorf("no kill landed while a consolidation replacement was in flight in %d rounds", sum.rounds)
	}
	if 3*sum.killsInFlight < sum.kills {
		t.Errorf("only %d of %d kills landed with a launch or a disruption in flight, want at least a third", sum.killsInFlight, sum.kills)
	}
}

func setup(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, ns); err != nil {
		t.Fatal(err)
	}
	instanceTypes := []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "c5.2xlarge"}
	for _, p := range []struct {
		name     string
		capacity string
		types    []string
	}{
		{pool, karpv1.CapacityTypeOnDemand, instanceTypes},
		{spotPool, karpv1.CapacityTypeSpot, instanceTypes},
		{soloPool, karpv1.CapacityTypeOnDemand, []string{"c5.large", "c5.2xlarge"}},
	} {
		objs, err := framework.NodePool(p.name, framework.PoolOptions{
			InstanceTypes:    p.types,
			CapacityTypes:    []string{p.capacity},
			ConsolidateAfter: "5s",
			Budgets:          []map[string]any{{"nodes": "100%"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := framework.Apply(ctx, env.Client, objs...); err != nil {
			t.Fatal(err)
		}
	}
	// Sizes such that a scale-out needs several instances: a large pod takes most of an xlarge, three of them
	// most of a 2xlarge (the cheaper packing), so a 2xlarge left with one after a scale-in is replaced by a
	// smaller type when no other node has room for it. The pinned pods may not be
	// disrupted; the spotty ones run on spot capacity, where the interruption action strikes.
	pinned := framework.Deployment(ns, "pinned", pool, 2, "100m", "128Mi")
	pinned.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	for _, d := range []*appsv1.Deployment{
		framework.Deployment(ns, "small", pool, 0, "250m", "256Mi"),
		framework.Deployment(ns, "large", pool, 3, "2500m", "3Gi"),
		framework.Deployment(ns, "spotty", spotPool, 2, "500m", "512Mi"),
		framework.Deployment(ns, "solo", soloPool, 3, "1200m", "1Gi"),
		pinned,
	} {
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for app, n := range pdbMin {
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(int32(n))),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			},
		}
		if err := env.Client.Create(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
}

// interrupt sends a spot interruption warning for a random spot node's instance (EC2 reclaims it 30 s later);
// it reports false when there is none.
func interrupt(t *testing.T, rng *rand.Rand) bool {
	t.Helper()
	claims, err := env.NodeClaims(context.Background(), spotPool)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range claims {
		if c.DeletionTimestamp.IsZero() && c.Status.ProviderID != "" {
			ids = append(ids, framework.InstanceID(c.Status.ProviderID))
		}
	}
	if len(ids) == 0 {
		return false
	}
	id := ids[rng.IntN(len(ids))]
	if err := env.SendInterruptionEvent(context.Background(), framework.InterruptionEvent{Kind: "spot-interruption",
		InstanceID: id, TerminateAfter: "30s"}); err != nil {
		t.Fatal(err)
	}
	return true
}

func scale(t *testing.T, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := env.Client.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

// drift changes the node class's tags, which drifts every NodeClaim of the pool.
func drift(t *testing.T, round int) {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: pool}, nc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(nc.DeepCopy())
	if nc.Spec.Tags == nil {
		nc.Spec.Tags = map[string]string{}
	}
	nc.Spec.Tags["chaos-round"] = strconv.Itoa(round)
	if err := env.Client.Patch(context.Background(), nc, patch); err != nil {
		t.Fatal(err)
	}
}

// countPanics counts panics in the controller's current log (read before each restart truncates it).
func countPanics(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(env.ControllerLogPath())
	if err != nil {
		t.Fatalf("reading the controller log: %v", err)
	}
	return strings.Count(string(b), "panic:")
}

type check struct {
	leaked, orphans, duplicates, stuckPods, panics int
	nodeClaims, instances, nodes                   int
}

// settle waits (up to 6 minutes) until every pod is Running, no NodeClaim is being deleted or launching, and
// instances, NodeClaims and Nodes agree; it returns what is still wrong at the end.
func settle(t *testing.T) check {
	t.Helper()
	var c check
	err := framework.Poll(context.Background(), 6*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		var err error
		c, err = measure(ctx)
		if err != nil {
			return false, "", err
		}
		ok := c.leaked == 0 && c.orphans == 0 && c.stuckPods == 0 && c.nodeClaims == c.instances && c.nodes == c.instances
		return ok, fmt.Sprintf("%+v", c), nil
	})
	if err != nil {
		t.Logf("not quiescent: %v", err)
	}
	return c
}

func measure(ctx context.Context) (check, error) { return measureIn(ctx, ns) }

// measureIn compares the cluster's NodeClaims and Nodes with the simulator's running instances and counts the
// pods of namespace that do not run.
func measureIn(ctx context.Context, namespace string) (check, error) {
	var c check
	p, err := framework.GetProgress(ctx, env.Client, namespace, client.MatchingLabels{})
	if err != nil {
		return c, err
	}
	c.stuckPods = p.Pods - p.PodsRunning
	claims := &karpv1.NodeClaimList{}
	if err := env.Client.List(ctx, claims); err != nil {
		return c, err
	}
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return c, err
	}
	c.nodes = len(nodes.Items)
	running, err := env.ClusterInstances(ctx)
	if err != nil {
		return c, err
	}
	c.instances = len(running)
	claimed := map[string]bool{}
	busy := false
	for _, nc := range claims.Items {
		if !nc.DeletionTimestamp.IsZero() || nc.Status.ProviderID == "" {
			busy = true
			continue
		}
		c.nodeClaims++
		id := framework.InstanceID(nc.Status.ProviderID)
		claimed[id] = true
		if _, ok := running[id]; !ok {
			c.orphans++
		}
	}
	if busy {
		c.nodeClaims = -1 // not quiescent yet
	}
	for id := range running {
		if !claimed[id] {
			c.leaked++
		}
	}
	return c, nil
}
