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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

const pool = "chaos"

// totals are the counts of the summary line.
type totals struct {
	rounds, leaked, orphans, duplicates, stuckPods, pdbViolations, panics int
	killsInLaunch, killsInDisruption, kills                               int
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

// TestChaos runs CHAOS_ROUNDS rounds (default 3) of a random action (scale-out, scale-in, drift) with the
// controller SIGKILLed at a random moment and started again, then waits for quiescence and checks the cluster
// against the simulator. The last line of its output is
// `chaos: rounds=R leaked=L orphans=O duplicates=D stuck_pods=S pdb_violations=P panics=X`.
func TestChaos(t *testing.T) {
	rounds := envInt(t, "CHAOS_ROUNDS", 3)
	seed := uint64(envInt(t, "CHAOS_SEED", 1))
	rng := rand.New(rand.NewPCG(seed, seed))
	ctx := context.Background()
	setup(t)

	var sum totals
	for r := 1; r <= rounds; r++ {
		action := []string{"scale-out", "scale-out", "scale-in", "drift"}[rng.IntN(4)]
		switch action {
		case "scale-out":
			scale(t, "small", int32(20+rng.IntN(81)))
			scale(t, "large", int32(5+rng.IntN(26)))
		case "scale-in":
			scale(t, "small", int32(rng.IntN(10)))
			scale(t, "large", int32(rng.IntN(5)))
		case "drift":
			drift(t, r)
		}
		// Kill at a random moment while the action is likely under way: a scale-out's launches within about 4 s
		// (batching, CreateFleet, a 500 ms pending state); consolidation and drift start after consolidateAfter
		// (5 s) and replace or drain for several seconds more. Note what was in flight.
		delay := 500 + rng.IntN(3500)
		if action != "scale-out" {
			delay = 3000 + rng.IntN(12000)
		}
		time.Sleep(time.Duration(delay) * time.Millisecond)
		inLaunch, inDisruption := inFlight(t)
		panics := countPanics(t)
		if _, err := env.KillController(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		sum.kills++
		if inLaunch {
			sum.killsInLaunch++
		}
		if inDisruption {
			sum.killsInDisruption++
		}
		if err := env.StartController(ctx); err != nil {
			t.Fatalf("round %d: restarting the controller: %v", r, err)
		}
		c := settle(t)
		c.panics = panics
		sum.rounds++
		sum.leaked += c.leaked
		sum.orphans += c.orphans
		sum.duplicates += c.duplicates
		sum.stuckPods += c.stuckPods
		sum.panics += c.panics
		fmt.Printf("chaos round %d: %s, kill in launch=%v in disruption=%v; leaked=%d orphans=%d duplicates=%d stuck_pods=%d panics=%d nodeclaims=%d instances=%d nodes=%d\n",
			r, action, inLaunch, inDisruption, c.leaked, c.orphans, c.duplicates, c.stuckPods, c.panics, c.nodeClaims, c.instances, c.nodes)
	}
	sum.panics += countPanics(t)
	sum.pdbViolations = -1 // not checked yet: no PodDisruptionBudget in the workload
	fmt.Printf("chaos: kills=%d in_launch=%d in_disruption=%d\n", sum.kills, sum.killsInLaunch, sum.killsInDisruption)
	line := fmt.Sprintf("chaos: rounds=%d leaked=%d orphans=%d duplicates=%d stuck_pods=%d pdb_violations=%d panics=%d",
		sum.rounds, sum.leaked, sum.orphans, sum.duplicates, sum.stuckPods, sum.pdbViolations, sum.panics)
	fmt.Println(line)
	if sum.leaked+sum.orphans+sum.duplicates+sum.stuckPods+sum.panics > 0 {
		t.Errorf("%s", line)
	}
}

func setup(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, pool); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(pool, framework.PoolOptions{
		InstanceTypes:    []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "c5.2xlarge"},
		CapacityTypes:    []string{"on-demand"},
		ConsolidateAfter: "5s",
		Budgets:          []map[string]any{{"nodes": "100%"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	// Sizes such that a scale-out needs several instances: a large pod fills most of an m5.large.
	for _, d := range []*appsv1.Deployment{
		framework.Deployment(pool, "small", pool, 0, "250m", "256Mi"),
		framework.Deployment(pool, "large", pool, 0, "1500m", "2Gi"),
	} {
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
}

func scale(t *testing.T, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: pool, Name: name}, d); err != nil {
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

// inFlight reports whether a launch (a NodeClaim without a registered Node) or a disruption (a NodeClaim being
// deleted) is under way.
func inFlight(t *testing.T) (launch, disruption bool) {
	t.Helper()
	claims, err := env.NodeClaims(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if !c.DeletionTimestamp.IsZero() {
			disruption = true
		} else if !meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeRegistered) {
			launch = true
		}
	}
	return launch, disruption
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

func measure(ctx context.Context) (check, error) {
	var c check
	p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels{})
	if err != nil {
		return c, err
	}
	c.stuckPods = p.Pods - p.PodsRunning
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		return c, err
	}
	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		return c, err
	}
	c.nodes = len(nodes)
	running, err := env.ClusterInstances(ctx)
	if err != nil {
		return c, err
	}
	c.instances = len(running)
	claimed := map[string]bool{}
	busy := false
	for _, nc := range claims {
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
	// Duplicate launches: more than one instance, in any state the simulator still reports, for one NodeClaim.
	perClaim := map[string]int{}
	pager := ec2.NewDescribeInstancesPaginator(env.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/" + env.ClusterName}},
	}})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return c, err
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				for _, tag := range inst.Tags {
					if aws.ToString(tag.Key) == awsv1.TagNodeClaim {
						perClaim[aws.ToString(tag.Value)]++
					}
				}
			}
		}
	}
	for _, n := range perClaim {
		if n > 1 {
			c.duplicates += n - 1
		}
	}
	return c, nil
}
