//go:build e2e

package karpenter

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// pools are the scenario's NodePools (each with an EC2NodeClass of the same name) and how many pods each gets.
// The spot pool's pods refuse to share a node, so Karpenter launches one NodeClaim per pod there.
var pools = []struct {
	name         string
	capacityType string
	replicas     int32
	onePerNode   bool
}{
	{name: "kp-on-demand", capacityType: karpv1.CapacityTypeOnDemand, replicas: 6},
	{name: "kp-spot", capacityType: karpv1.CapacityTypeSpot, replicas: 4, onePerNode: true},
}

// TestKarpenterOnTheLocalStack runs Karpenter's own controller (v1.14, or $KARPENTER_VERSION) on the stack, with
// Dovetail's not running:
// it scales a workload out over two NodePools, and the NodeClaims, Nodes, instances and launch templates carry
// Karpenter's labels, annotations and tags; deleting a NodeClaim terminates its instance and Karpenter replaces
// it; scaling to zero lets consolidation remove the empty nodes; deleting the NodePools removes the rest.
func TestKarpenterOnTheLocalStack(t *testing.T) {
	ctx := context.Background()
	k, err := env.StartKarpenter(ctx, framework.KarpenterOptions{Env: []string{"INTERRUPTION_QUEUE=" + env.ClusterName}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("running Karpenter %s (%s), log %s", k.Version, k.Binary, k.LogPath)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- karpenter log (last 60 lines) ---\n%s", env.LogTail(k.Name, 60))
			t.Logf("--- awssim log (last 30 lines) ---\n%s", env.LogTail("awssim", 30))
		}
		if err := k.Stop(30 * time.Second); err != nil {
			t.Errorf("stopping karpenter: %v", err)
		}
	})

	for _, p := range pools {
		setupPool(t, p.name, p.capacityType)
		d := framework.Deployment(p.name, "app", p.name, p.replicas, "1", "1Gi")
		if p.onePerNode {
			d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
					TopologyKey:   corev1.LabelHostname,
				}},
			}}
		}
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pools {
		waitRunning(t, p.name, int(p.replicas), 3*time.Minute)
	}
	for _, p := range pools {
		claims := checkPool(t, p.name, p.capacityType)
		if p.onePerNode && len(claims) != int(p.replicas) {
			t.Errorf("nodepool %s: %d nodeclaims for %d pods that refuse to share a node", p.name, len(claims), p.replicas)
		}
	}
	checkLaunchTemplates(t)
	checkNoStrayInstances(t)

	t.Run("deleting a NodeClaim terminates its instance and Karpenter replaces it", func(t *testing.T) {
		pool := pools[0].name
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil || len(claims) == 0 {
			t.Fatalf("nodeclaims of %s: %d, %v", pool, len(claims), err)
		}
		victim := claims[0]
		id := framework.InstanceID(victim.Status.ProviderID)
		// Timestamps have second precision.
		deleted := time.Now().Truncate(time.Second)
		if err := env.Client.Delete(ctx, &victim); err != nil {
			t.Fatal(err)
		}
		waitTerminated(t, id)
		waitGone(t, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name}})
		waitGone(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim.Status.NodeName}})
		waitRunning(t, pool, int(pools[0].replicas), 3*time.Minute)
		after, err := env.NodeClaims(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		replaced := false
		for _, c := range after {
			replaced = replaced || !c.CreationTimestamp.Time.Before(deleted)
		}
		if !replaced {
			t.Errorf("nodepool %s: no nodeclaim launched after %s was deleted (%d left)", pool, victim.Name, len(after))
		}
	})

	t.Run("consolidation removes the nodes of a workload scaled to zero", func(t *testing.T) {
		pool := pools[1].name
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil || len(claims) == 0 {
			t.Fatalf("nodeclaims of %s: %d, %v", pool, len(claims), err)
		}
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: pool, Name: "app"}, d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr.To[int32](0)
		if err := env.Client.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		err = framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := env.NodeClaims(ctx, pool)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Fatalf("nodepool %s: %v", pool, err)
		}
		for _, c := range claims {
			waitTerminated(t, framework.InstanceID(c.Status.ProviderID))
		}
	})
}

// setupPool applies a NodePool and its EC2NodeClass (consolidation of empty nodes after 5 s, no budget window),
// and a namespace of the same name; cleanup deletes the namespace and the NodePool and waits until Karpenter has
// removed the NodePool's NodeClaims and terminated their instances.
func setupPool(t *testing.T, name, capacityType string) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, name); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(name, framework.PoolOptions{CapacityTypes: []string{capacityType},
		ConsolidateAfter: "5s", Budgets: []map[string]any{{"nodes": "100%"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		claims, _ := env.NodeClaims(ctx, name)
		if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", name, err)
		}
		if err := env.Client.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting nodepool %s: %v", name, err)
		}
		err := framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := env.NodeClaims(ctx, name)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Errorf("cleanup of nodepool %s: %v", name, err)
		}
		for _, c := range claims {
			if c.Status.ProviderID != "" {
				waitTerminated(t, framework.InstanceID(c.Status.ProviderID))
			}
		}
		// Karpenter's finalizer on the EC2NodeClass deletes its launch templates and instance profile.
		if err := env.Client.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting ec2nodeclass %s: %v", name, err)
		}
		waitGone(t, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
		out, err := env.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{
			Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.k8s.aws/ec2nodeclass"), Values: []string{name}}}})
		if err != nil || len(out.LaunchTemplates) != 0 {
			t.Errorf("cleanup: launch templates of ec2nodeclass %s left: %+v, %v", name, out, err)
		}
	})
}

// waitRunning waits until n pods of the namespace's Deployment are Running.
func waitRunning(t *testing.T, namespace string, n int, timeout time.Duration) {
	t.Helper()
	err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, env.Client, namespace, client.MatchingLabels{"app": "app"})
		return p.PodsRunning >= n, p.String(), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Running pods in %s: %v\n%s", n, namespace, err, env.Describe(namespace, namespace))
	}
}

// waitTerminated waits until the simulator reports the instance terminated (or forgotten).
func waitTerminated(t *testing.T, id string) {
	t.Helper()
	err := framework.Poll(context.Background(), 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		states, err := env.InstanceStates(ctx, id)
		state, known := states[id]
		return !known || state == "terminated", id + " is " + state, err
	})
	if err != nil {
		t.Errorf("instance %s: %v", id, err)
	}
}

// waitGone waits until the object no longer exists.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	err := framework.Poll(context.Background(), 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("%T %s still there", obj, obj.GetName()), err
	})
	if err != nil {
		t.Error(err)
	}
}

// checkPool checks the NodeClaims, Nodes and instances of a NodePool Karpenter launched and returns the NodeClaims.
func checkPool(t *testing.T, pool, capacityType string) []karpv1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	var claims []karpv1.NodeClaim
	err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		var err error
		claims, err = env.NodeClaims(ctx, pool)
		if err != nil || len(claims) == 0 {
			return false, fmt.Sprintf("%d nodeclaims", len(claims)), err
		}
		for _, c := range claims {
			for _, cond := range []string{"Launched", "Registered", "Initialized", "Ready"} {
				if !conditionTrue(c.Status.Conditions, cond) {
					return false, fmt.Sprintf("nodeclaim %s not %s", c.Name, cond), nil
				}
			}
			// The tagging controller adds the Name tag and these annotations after registration.
			if c.Annotations["karpenter.k8s.aws/tagged"] != "true" {
				return false, fmt.Sprintf("nodeclaim %s not tagged yet", c.Name), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("nodepool %s: %v", pool, err)
	}
	for _, c := range claims {
		t.Logf("nodepool %s: nodeclaim %s %s %s %s node %s", pool, c.Name, c.Labels[corev1.LabelInstanceTypeStable],
			c.Labels[karpv1.CapacityTypeLabelKey], c.Labels[corev1.LabelTopologyZone], c.Status.NodeName)
	}
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, nc); err != nil {
		t.Fatal(err)
	}
	// The EC2NodeClass's validation creates a launch template and makes dry-run CreateFleet and RunInstances calls.
	for _, cond := range []string{"ValidationSucceeded", "Ready"} {
		if !conditionTrue(nc.Status.Conditions, cond) {
			t.Errorf("ec2nodeclass %s is not %s: %+v", pool, cond, nc.Status.Conditions)
		}
	}
	cluster := env.ClusterName
	for _, c := range claims {
		wantLabels := map[string]string{
			karpv1.NodePoolLabelKey:          pool,
			"karpenter.k8s.aws/ec2nodeclass": pool,
			karpv1.CapacityTypeLabelKey:      capacityType,
			corev1.LabelOSStable:             "linux",
			corev1.LabelArchStable:           "amd64",
		}
		requireEntries(t, "nodeclaim "+c.Name+" labels", c.Labels, wantLabels)
		requireKeys(t, "nodeclaim "+c.Name+" labels", c.Labels, corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone,
			corev1.LabelTopologyRegion, "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-family",
			"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-memory")
		hashes := map[string]string{
			"karpenter.sh/nodepool-hash":                  np.Annotations["karpenter.sh/nodepool-hash"],
			"karpenter.sh/nodepool-hash-version":          np.Annotations["karpenter.sh/nodepool-hash-version"],
			"karpenter.k8s.aws/ec2nodeclass-hash":         nc.Annotations["karpenter.k8s.aws/ec2nodeclass-hash"],
			"karpenter.k8s.aws/ec2nodeclass-hash-version": nc.Annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"],
			"karpenter.k8s.aws/instance-profile-name":     nc.Status.InstanceProfile,
			"karpenter.sh/nodeclaim-min-values-relaxed":   "false",
		}
		requireEntries(t, "nodeclaim "+c.Name+" annotations", c.Annotations, hashes)
		requireEntries(t, "nodeclaim "+c.Name+" annotations", c.Annotations, map[string]string{
			"karpenter.k8s.aws/tagged":                            "true",
			"compatibility.karpenter.k8s.aws/cluster-name-tagged": "true",
		})
		for _, key := range []string{"karpenter.sh/nodepool-hash", "karpenter.sh/nodepool-hash-version"} {
			if np.Annotations[key] == "" {
				t.Errorf("nodepool %s has no %s annotation", pool, key)
			}
		}
		for _, key := range []string{"karpenter.k8s.aws/ec2nodeclass-hash", "karpenter.k8s.aws/ec2nodeclass-hash-version"} {
			if nc.Annotations[key] == "" {
				t.Errorf("ec2nodeclass %s has no %s annotation", pool, key)
			}
		}
		if !containsString(c.Finalizers, "karpenter.sh/termination") {
			t.Errorf("nodeclaim %s finalizers = %v, want karpenter.sh/termination", c.Name, c.Finalizers)
		}

		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		requireEntries(t, "node "+node.Name+" labels", node.Labels, wantLabels)
		requireEntries(t, "node "+node.Name+" labels", node.Labels, map[string]string{
			"karpenter.sh/registered": "true", "karpenter.sh/initialized": "true", "karpenter.sh/do-not-sync-taints": "true",
			corev1.LabelInstanceTypeStable: c.Labels[corev1.LabelInstanceTypeStable],
			corev1.LabelTopologyZone:       c.Labels[corev1.LabelTopologyZone],
		})
		// The Node gets the NodeClaim's annotations when it registers.
		requireEntries(t, "node "+node.Name+" annotations", node.Annotations, hashes)
		if !containsString(node.Finalizers, "karpenter.sh/termination") {
			t.Errorf("node %s finalizers = %v, want karpenter.sh/termination", node.Name, node.Finalizers)
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == "karpenter.sh/unregistered" || taint.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
				t.Errorf("node %s still has taint %s", node.Name, taint.Key)
			}
		}
		if node.Spec.ProviderID != c.Status.ProviderID {
			t.Errorf("node %s providerID %s, nodeclaim %s has %s", node.Name, node.Spec.ProviderID, c.Name, c.Status.ProviderID)
		}

		tags := instanceTags(t, framework.InstanceID(c.Status.ProviderID))
		requireEntries(t, "instance of "+c.Name+" tags", tags, map[string]string{
			"karpenter.sh/nodepool":            pool,
			"karpenter.sh/nodeclaim":           c.Name,
			"karpenter.k8s.aws/ec2nodeclass":   pool,
			"kubernetes.io/cluster/" + cluster: "owned",
			"eks:eks-cluster-name":             cluster,
			"Name":                             c.Status.NodeName,
		})
		requireKeys(t, "instance of "+c.Name+" tags", tags, "aws:ec2:fleet-id")
	}
	return claims
}

// checkLaunchTemplates checks the launch templates Karpenter created: named karpenter.k8s.aws/<hash>, tagged like
// the instances but without karpenter.sh/nodeclaim (and with an empty karpenter.sh/nodepool on the one the
// EC2NodeClass validation made), and without the karpenter.k8s.aws/cluster tag Dovetail adds.
func checkLaunchTemplates(t *testing.T) {
	t.Helper()
	out, err := env.EC2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:eks:eks-cluster-name"), Values: []string{env.ClusterName}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LaunchTemplates) == 0 {
		t.Fatal("no launch templates tagged eks:eks-cluster-name=" + env.ClusterName)
	}
	poolNames := map[string]bool{}
	for _, p := range pools {
		poolNames[p.name] = true
	}
	for _, lt := range out.LaunchTemplates {
		tags := map[string]string{}
		for _, tag := range lt.Tags {
			tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		name := aws.ToString(lt.LaunchTemplateName)
		if !strings.HasPrefix(name, "karpenter.k8s.aws/") {
			t.Errorf("launch template %s: want a name starting karpenter.k8s.aws/", name)
		}
		requireEntries(t, "launch template "+name+" tags", tags, map[string]string{
			"kubernetes.io/cluster/" + env.ClusterName: "owned",
			"eks:eks-cluster-name":                     env.ClusterName,
		})
		if nc := tags["karpenter.k8s.aws/ec2nodeclass"]; !poolNames[nc] {
			t.Errorf("launch template %s: karpenter.k8s.aws/ec2nodeclass = %q, want one of the test's", name, nc)
		}
		if pool, ok := tags["karpenter.sh/nodepool"]; !ok || (pool != "" && !poolNames[pool]) {
			t.Errorf("launch template %s: karpenter.sh/nodepool = %q (present %t)", name, pool, ok)
		}
		for _, key := range []string{"karpenter.sh/nodeclaim", "Name", "karpenter.k8s.aws/cluster"} {
			if v, ok := tags[key]; ok {
				t.Errorf("launch template %s: unexpected tag %s=%q", name, key, v)
			}
		}
	}
}

// checkNoStrayInstances checks that every running instance of the cluster belongs to a NodeClaim: none was
// launched by a dry run or twice for one NodeClaim.
func checkNoStrayInstances(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	claims := &karpv1.NodeClaimList{}
	if err := env.Client.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	owned := map[string]string{}
	for _, c := range claims.Items {
		owned[framework.InstanceID(c.Status.ProviderID)] = c.Name
	}
	instances, err := env.ClusterInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, state := range instances {
		if owned[id] == "" {
			t.Errorf("instance %s (%s) belongs to no NodeClaim (tags %v)", id, state, instanceTags(t, id))
		}
	}
	if len(instances) != len(claims.Items) {
		t.Errorf("%d running instances for %d NodeClaims", len(instances), len(claims.Items))
	}
	// Every instance ever launched (terminated ones too) got a NodeClaim's tag, each NodeClaim's on one instance.
	launches, err := env.Launches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perClaim := map[string]int{}
	for _, l := range launches {
		name := l.Tags["karpenter.sh/nodeclaim"]
		if name == "" {
			t.Errorf("instance %s (%s, launched %s) never got a karpenter.sh/nodeclaim tag: %v", l.ID, l.Type, l.LaunchTime, l.Tags)
			continue
		}
		if perClaim[name]++; perClaim[name] == 2 {
			t.Errorf("nodeclaim %s was launched more than once", name)
		}
	}
	// The EC2NodeClass validation's calls reached the simulator as dry runs.
	calls, err := env.CallLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dryRuns := map[string]int{}
	for _, r := range calls.Records {
		if r.Error == "DryRunOperation" {
			dryRuns[r.Action]++
		}
	}
	for _, action := range []string{"CreateFleet", "RunInstances"} {
		if dryRuns[action] == 0 {
			t.Errorf("no dry-run %s in the simulator's call log (dry runs: %v)", action, dryRuns)
		}
	}
}

func instanceTags(t *testing.T, id string) map[string]string {
	t.Helper()
	out, err := env.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances %s: %+v, %v", id, out, err)
	}
	tags := map[string]string{}
	for _, tag := range out.Reservations[0].Instances[0].Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	return tags
}

func requireEntries(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := got[k]; !ok || v != want[k] {
			t.Errorf("%s: %s = %q (present %t), want %q", what, k, v, ok, want[k])
		}
	}
}

func requireKeys(t *testing.T, what string, got map[string]string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if got[k] == "" {
			t.Errorf("%s: no %s", what, k)
		}
	}
}

func conditionTrue(conds []metav1.Condition, condType string) bool {
	for _, c := range conds {
		if c.Type == condType {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
