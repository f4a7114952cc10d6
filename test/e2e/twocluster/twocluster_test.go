//go:build e2e

package twocluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/cluster/identity"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

const (
	pool    = "twocluster"
	app     = "app"
	uidTag  = tags.ClusterUID
	timeout = 2 * time.Minute
)

// cluster is one side of the scenario.
type cluster struct {
	name   string
	stack  *framework.Stack
	uid    string
	caller string
}

// TestTwoClustersOneName: two clusters named "dovetail" share one account. Both scale
// out and in, a's EC2NodeClass is edited so its nodes drift and are replaced, and b is torn down with
// `dovetailctl teardown`. Throughout, every Node lands in the cluster that launched its instance; afterwards a's
// instances, launch templates and instance profile are all still there, and the simulator's call log shows no
// mutating call by b's controller or b's teardown on a resource tagged with a's UID (nor by a's on b's). Each
// controller warned once (event ClusterNameConflict, gauge dovetail_cluster_name_conflicts = 1).
func TestTwoClustersOneName(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	ca, cb := &cluster{name: "a", stack: a, caller: callerA}, &cluster{name: "b", stack: b, caller: callerB}
	for _, c := range []*cluster{ca, cb} {
		uid, err := c.stack.ClusterUID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.uid = uid
		setup(t, c, 4)
	}
	if ca.uid == cb.uid {
		t.Fatalf("both clusters have UID %s", ca.uid)
	}
	// The call log is checked however the scenario ends, so a failure says which calls crossed over.
	defer checkCallLog(t, ca, cb)

	// Scale out: 4 pods of 1 CPU on m5.large (2 vCPU) each need 4 nodes.
	for _, c := range []*cluster{ca, cb} {
		waitPool(t, c, 4, 4, nil)
	}
	t.Logf("both scaled out to 4 nodes in %.0fs", time.Since(start).Seconds())
	checkPlacement(t, ca, cb)

	// Scale in to 1 pod: the empty nodes are consolidated away.
	for _, c := range []*cluster{ca, cb} {
		scale(t, c, 1)
	}
	for _, c := range []*cluster{ca, cb} {
		waitPool(t, c, 1, 1, nil)
	}
	t.Logf("both scaled in to 1 node at %.0fs", time.Since(start).Seconds())

	// Drift a: a new tag on its EC2NodeClass changes its hash; its node is replaced from a new launch template.
	before, err := ca.stack.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	nc.Name = pool
	if err := ca.stack.Client.Patch(ctx, nc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"tags":{"e2e-drift":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	waitPool(t, ca, 1, 1, func(claims []karpv1.NodeClaim) (bool, string) {
		for _, c := range claims {
			for _, old := range before {
				if c.Name == old.Name {
					return false, "waiting for drifted nodeclaim " + old.Name + " to be replaced"
				}
			}
		}
		return true, ""
	})
	t.Logf("a's drifted node replaced at %.0fs", time.Since(start).Seconds())
	checkPlacement(t, ca, cb)

	// Each controller has warned, once, that the other cluster uses its name.
	checkWarned(t, ca, cb)
	checkWarned(t, cb, ca)

	// What a owns before b's teardown: none of it may change.
	instancesA := instances(t, ca)
	templatesA := launchTemplates(t, ca)
	profileA := resolve.InstanceProfileName(tags.Cluster{Name: "dovetail", UID: ca.uid}, framework.Region, pool)
	if len(instancesA) != 1 || len(templatesA) == 0 || !profileExists(t, profileA) {
		t.Fatalf("cluster a before teardown: instances %v, launch templates %v, instance profile %s exists %v", instancesA, templatesA, profileA, profileExists(t, profileA))
	}

	teardown(t, cb)
	t.Logf("b torn down at %.0fs", time.Since(start).Seconds())
	if left := instances(t, cb); len(left) != 0 {
		t.Errorf("cluster b: instances left after teardown: %v", left)
	}
	if left := launchTemplates(t, cb); len(left) != 0 {
		t.Errorf("cluster b: launch templates left after teardown: %v", left)
	}

	// a is untouched: same instances, launch templates and instance profile, pod still running.
	if got := instances(t, ca); strings.Join(got, ",") != strings.Join(instancesA, ",") {
		t.Errorf("cluster a's instances changed during b's teardown: %v, were %v", got, instancesA)
	}
	if got := launchTemplates(t, ca); strings.Join(got, ",") != strings.Join(templatesA, ",") {
		t.Errorf("cluster a's launch templates changed during b's teardown: %v, were %v", got, templatesA)
	}
	if !profileExists(t, profileA) {
		t.Errorf("cluster a's instance profile %s is gone", profileA)
	}
	waitPool(t, ca, 1, 1, nil)
	t.Logf("scenario done in %.0fs", time.Since(start).Seconds())
}

// setup applies the NodePool and EC2NodeClass (m5.large on-demand only, consolidation at once) and a deployment
// of replicas 1-CPU pods in one cluster.
func setup(t *testing.T, c *cluster, replicas int32) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, c.stack.Client, pool); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "0s", Budgets: []map[string]any{{"nodes": "100%"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, c.stack.Client, objs...); err != nil {
		t.Fatal(err)
	}
	if err := c.stack.Client.Create(ctx, framework.Deployment(pool, app, pool, replicas, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
}

func scale(t *testing.T, c *cluster, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = pool, app
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := c.stack.Client.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("cluster %s: scaling to %d: %v", c.name, replicas, err)
	}
}

// waitPool waits until the cluster runs pods pods and exactly nodes registered NodeClaims (and Nodes) of the
// pool, and extra (if any) agrees.
func waitPool(t *testing.T, c *cluster, pods, nodes int, extra func([]karpv1.NodeClaim) (bool, string)) {
	t.Helper()
	err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, c.stack.Client, pool, client.MatchingLabels{"app": app})
		if err != nil {
			return false, "", err
		}
		claims, err := c.stack.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		ns, err := c.stack.Nodes(ctx, pool)
		if err != nil {
			return false, "", err
		}
		registered := 0
		for _, nc := range claims {
			if nc.Status.NodeName != "" && nc.DeletionTimestamp.IsZero() {
				registered++
			}
		}
		status := fmt.Sprintf("%s; %d nodeclaims (%d registered), %d nodes", p, len(claims), registered, len(ns))
		if p.PodsRunning != pods || p.Pods != pods || len(claims) != nodes || registered != nodes || len(ns) != nodes {
			return false, status, nil
		}
		if extra != nil {
			ok, why := extra(claims)
			return ok, status + "; " + why, nil
		}
		return true, status, nil
	})
	if err != nil {
		t.Fatalf("cluster %s: waiting for %d pods on %d nodes: %v", c.name, pods, nodes, err)
	}
}

// checkPlacement: every Node of each cluster is an instance tagged with that cluster's UID.
func checkPlacement(t *testing.T, cs ...*cluster) {
	t.Helper()
	for _, c := range cs {
		ns, err := c.stack.Nodes(context.Background(), pool)
		if err != nil {
			t.Fatal(err)
		}
		own := map[string]bool{}
		for _, id := range instances(t, c) {
			own[id] = true
		}
		for _, n := range ns {
			if id := framework.InstanceID(n.Spec.ProviderID); !own[id] {
				t.Errorf("cluster %s: node %s is instance %s, which is not tagged %s=%s", c.name, n.Name, id, uidTag, c.uid)
			}
		}
	}
}

// instances returns the sorted ids of the pending or running instances tagged with the cluster's UID.
func instances(t *testing.T, c *cluster) []string {
	t.Helper()
	out, err := a.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:" + uidTag), Values: []string{c.uid}},
		{Name: awssdk.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			ids = append(ids, awssdk.ToString(i.InstanceId))
		}
	}
	sort.Strings(ids)
	return ids
}

// launchTemplates returns the sorted names of the launch templates tagged with the cluster's UID.
func launchTemplates(t *testing.T, c *cluster) []string {
	t.Helper()
	out, err := a.EC2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:" + uidTag), Values: []string{c.uid}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lt := range out.LaunchTemplates {
		names = append(names, awssdk.ToString(lt.LaunchTemplateName))
	}
	sort.Strings(names)
	return names
}

func profileExists(t *testing.T, name string) bool {
	t.Helper()
	client := iam.New(iam.Options{Region: framework.Region, BaseEndpoint: awssdk.String(a.AWSEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("123456789012", "local-simulator", ""), HTTPClient: sdk.NewHTTPClient(nil)})
	_, err := client.GetInstanceProfile(context.Background(), &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(name)})
	if err != nil && !sdk.IsNotFound(err) {
		t.Fatalf("GetInstanceProfile %s: %v", name, err)
	}
	return err == nil
}

// checkWarned waits for the cluster's controller to have recorded exactly one ClusterNameConflict event naming
// the other cluster (count 1: a repeated warning would be aggregated into the same Event with a higher count)
// and to export dovetail_cluster_name_conflicts 1.
func checkWarned(t *testing.T, c *cluster, other *cluster) {
	t.Helper()
	err := framework.Poll(context.Background(), 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		l := &corev1.EventList{}
		if err := c.stack.Client.List(ctx, l, client.InNamespace("default")); err != nil {
			return false, "", err
		}
		var conflicts []string
		count := int32(0)
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == "kube-system" && e.Reason == identity.ReasonNameConflict {
				conflicts = append(conflicts, e.Message)
				count += max(e.Count, 1)
			}
		}
		v, ok, err := c.stack.Metric(ctx, "dovetail_cluster_name_conflicts")
		if err != nil {
			return false, "", err
		}
		status := fmt.Sprintf("events %q (count %d), gauge %v (exported %v)", conflicts, count, v, ok)
		done := len(conflicts) == 1 && count == 1 && strings.Contains(conflicts[0], "(UID "+other.uid+")") && ok && v == 1
		return done, status, nil
	})
	if err != nil {
		t.Errorf("cluster %s: warning about the other cluster: %v", c.name, err)
		return
	}
	t.Logf("cluster %s warned once about cluster %s", c.name, other.name)
}

// teardown runs `dovetailctl teardown` against the cluster, as its own operator would (teardownAs, as b's
// teardown in the call log).
func teardown(t *testing.T, c *cluster) {
	t.Helper()
	teardownAs(t, c, callerTeardownB)
}

// checkCallLog reads the simulator's call log: no mutating call by one cluster's controller (or b's teardown)
// named a resource tagged with the other cluster's UID, and (when the scenario ran to its end) b's side did
// terminate instances, delete launch templates and remove its instance profile, so the check had something to
// catch.
func checkCallLog(t *testing.T, ca, cb *cluster) {
	t.Helper()
	log, err := a.CallLog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if log.Dropped > 0 {
		t.Errorf("the call log dropped %d records", log.Dropped)
	}
	uidOf := map[string]string{callerA: ca.uid, callerB: cb.uid, callerTeardownB: cb.uid}
	counts := map[string]int{}
	var foreign []string
	for _, r := range log.Records {
		own, known := uidOf[r.Caller]
		if !known {
			t.Errorf("call %d (%s) by unknown caller %q", r.Seq, r.Action, r.Caller)
			continue
		}
		if r.Error == "" {
			counts[r.Caller+" "+r.Action]++
		}
		for _, res := range r.Resources {
			if uid, tagged := res.Tags[uidTag]; tagged && uid != own {
				foreign = append(foreign, describeCall(r, res))
			}
		}
	}
	if len(foreign) > 0 {
		t.Errorf("%d calls acted on the other cluster's resources:\n%s", len(foreign), strings.Join(foreign, "\n"))
	}
	t.Logf("call log: %d mutating calls; successful by caller and action: %v", len(log.Records), counts)
	if t.Failed() {
		return // the scenario stopped early: the calls below may not have happened
	}
	for _, want := range []string{callerA + " CreateFleet", callerA + " TerminateInstances", callerA + " CreateLaunchTemplate",
		callerB + " CreateFleet", callerB + " TerminateInstances", callerB + " DeleteLaunchTemplate",
		callerB + " RemoveRoleFromInstanceProfile", callerB + " DeleteInstanceProfile"} {
		if counts[want] == 0 {
			t.Errorf("no successful %s in the call log: the scenario did not exercise it", want)
		}
	}
}

func describeCall(r awssim.CallRecord, res awssim.CallResource) string {
	return fmt.Sprintf("  #%d %s %s by %s on %s (%s=%s)", r.Seq, r.Service, r.Action, r.Caller, res.ARN, uidTag, res.Tags[uidTag])
}
