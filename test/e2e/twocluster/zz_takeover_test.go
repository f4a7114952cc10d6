//go:build e2e

package twocluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// The takeover scenario's pools: steady's nodes each run one pod (three become empty before the swap); drift's
// template changed before the swap, so its nodes are drifted, one of them running a do-not-disrupt pod.
const (
	tkNamespace = "takeover"
	tkSteady    = "tk-steady"
	tkDrift     = "tk-drift"
	tkKeep      = "tk-keep"
	tkUnder     = "tk-under"
	tkOther     = "tk-other"
)

// TestTakeOverKarpenterCluster: a 22-node cluster in Karpenter's state is taken over. The cluster is built by
// Dovetail and then left as Karpenter v1.14 leaves one (fixtures written from Karpenter's source, since its
// controller is not run here): the cluster-UID tag removed from every instance and launch template, NodePools and
// NodeClaims stamped with Karpenter's nodepool hash (version v3), EC2NodeClasses and NodeClaims with its
// ec2nodeclass hash (v5); then, with no controller running, the drift pool's template is changed and the steady
// pool's Deployment scaled from 12 to 9. A second cluster of the same name in the account, also in Karpenter's state,
// has its controller stopped throughout. When Dovetail starts: every instance is adopted (tagged with the UID); the
// three empty nodes are removed and the nine busy steady nodes stay (no node replaced that no policy selects); the
// two underutilized m5.xlarge nodes (m5.large allowed while no controller ran) are consolidated onto m5.large; the
// drifted nodes are replaced within their budget but the one running a do-not-disrupt pod; every pod runs; a later
// EC2NodeClass change drifts and replaces the adopted steady nodes; `dovetailctl teardown` leaves no instance or
// launch template. The other cluster's instances are never touched, and its own controller adopts them when it
// starts again.
func TestTakeOverKarpenterCluster(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	ca, cb := &cluster{name: "a", stack: a, caller: callerA}, &cluster{name: "b", stack: b, caller: callerB}
	for _, c := range []*cluster{ca, cb} {
		uid, err := c.stack.ClusterUID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.uid = uid
		if err := framework.EnsureNamespace(ctx, c.stack.Client, tkNamespace); err != nil {
			t.Fatal(err)
		}
	}
	// steady removes only empty nodes (WhenEmpty), so its busy nodes are no candidates of the consolidation the
	// underutilized pool starts; drift and under consolidate whatever is underutilized.
	applyPool(t, ca, tkSteady, "WhenEmpty", []map[string]any{{"nodes": "100%"}})
	applyPool(t, ca, tkDrift, "", []map[string]any{{"nodes": "50%"}})
	applyPool(t, cb, tkOther, "", []map[string]any{{"nodes": "100%"}})
	// Underutilized: two m5.xlarge nodes each running one 1-CPU pod; m5.large is allowed once the controller is down.
	applyPoolTypes(t, ca, tkUnder, []string{"m5.xlarge"})
	deploy(t, ca, tkSteady, tkSteady, 12, false)
	deploy(t, ca, tkDrift, tkDrift, 7, false)
	deploy(t, ca, tkKeep, tkDrift, 1, true)
	deploy(t, cb, tkOther, tkOther, 2, false)
	deployApart(t, ca, tkUnder, 2)
	waitNodes(t, ca, tkSteady, 12, 12, nil)
	waitNodes(t, ca, tkDrift, 8, 8, nil)
	waitNodes(t, cb, tkOther, 2, 2, nil)
	waitNodes(t, ca, tkUnder, 2, 2, nil)
	t.Logf("22 nodes in cluster a and 2 in cluster b at %.0fs", time.Since(start).Seconds())

	steadyBefore, driftBefore, underBefore := claimNames(t, ca, tkSteady), claimNames(t, ca, tkDrift), claimNames(t, ca, tkUnder)
	keepNode := nodeOfPod(t, ca, tkKeep)
	instancesA, instancesB := instances(t, ca), instances(t, cb)
	templatesA := templatesOf(t, instancesA)
	for _, c := range []*cluster{ca, cb} {
		if _, err := c.stack.KillController(); err != nil {
			t.Fatal(err)
		}
	}
	// Karpenter's state, then the changes made while no controller runs.
	karpenterize(t, ca, map[string]string{tkSteady: "k-steady-1", tkDrift: "k-drift-1", tkUnder: "k-under-1"})
	karpenterize(t, cb, map[string]string{tkOther: "k-other-1"})
	patch(t, ca, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: tkDrift}},
		`{"metadata":{"annotations":{"karpenter.sh/nodepool-hash":"k-drift-2"}},"spec":{"template":{"metadata":{"labels":{"generation":"2"}}}}}`)
	patch(t, ca, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tkNamespace, Name: tkSteady}}, `{"spec":{"replicas":9}}`)
	// Requirements are not hashed: allowing m5.large drifts nothing, but makes the m5.xlarge nodes underutilized.
	patch(t, ca, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: tkUnder}}, string(instanceTypesPatch(t, tkUnder, "m5.large", "m5.xlarge")))
	if got := instances(t, ca); len(got) != 0 {
		t.Fatalf("cluster a still has instances with its UID after the fixture removed it: %v", got)
	}
	takeover := time.Now()
	if err := ca.stack.StartController(ctx); err != nil {
		t.Fatal(err)
	}

	// Adoption: every instance of a, none of b's.
	err := framework.Poll(ctx, timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		out, err := a.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: instancesA})
		if err != nil {
			return false, "", err
		}
		var waiting []string
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				if st := i.State.Name; st != ec2types.InstanceStateNameRunning && st != ec2types.InstanceStateNamePending {
					continue // terminated by a policy: adopted first (termination adopts), or it would still run
				}
				if tagValue(i.Tags, uidTag) != ca.uid {
					waiting = append(waiting, awssdk.ToString(i.InstanceId))
				}
			}
		}
		return len(waiting) == 0, fmt.Sprintf("instances not adopted yet: %v", waiting), nil
	})
	if err != nil {
		t.Fatalf("adoption: %v", err)
	}
	t.Logf("instances adopted %.0fs after the controller started", time.Since(takeover).Seconds())

	// Only what the policies select goes: the 3 empty steady nodes; the drifted ones but the do-not-disrupt one.
	waitNodes(t, ca, tkSteady, 9, 9, func(claims []karpv1.NodeClaim) (bool, string) {
		for _, nc := range claims {
			if !slices.Contains(steadyBefore, nc.Name) {
				return false, "steady nodeclaim " + nc.Name + " was launched after the takeover"
			}
		}
		return true, ""
	})
	waitNodes(t, ca, tkDrift, 8, 8, func(claims []karpv1.NodeClaim) (bool, string) {
		kept := 0
		for _, nc := range claims {
			if slices.Contains(driftBefore, nc.Name) {
				if nc.Status.NodeName != keepNode {
					return false, "drifted nodeclaim " + nc.Name + " not replaced yet"
				}
				kept++
			}
		}
		return kept == 1, fmt.Sprintf("%d of the old nodeclaims kept, want the do-not-disrupt one on %s", kept, keepNode)
	})
	waitNodes(t, ca, tkUnder, 2, 2, func(claims []karpv1.NodeClaim) (bool, string) {
		for _, nc := range claims {
			if slices.Contains(underBefore, nc.Name) {
				return false, "underutilized nodeclaim " + nc.Name + " not consolidated yet"
			}
			if it := nc.Labels[corev1.LabelInstanceTypeStable]; it != "m5.large" {
				return false, "nodeclaim " + nc.Name + " is " + it
			}
		}
		return true, ""
	})
	t.Logf("takeover settled %.0fs after the controller started", time.Since(takeover).Seconds())
	checkKept(t, ca, keepNode)
	checkUntouched(t, instancesB)

	// An EC2NodeClass change after the takeover drifts the adopted nodes.
	patch(t, ca, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: tkSteady}}, `{"spec":{"tags":{"e2e-drift":"1"}}}`)
	waitNodes(t, ca, tkSteady, 9, 9, func(claims []karpv1.NodeClaim) (bool, string) {
		for _, nc := range claims {
			if slices.Contains(steadyBefore, nc.Name) {
				return false, "adopted nodeclaim " + nc.Name + " not replaced yet"
			}
		}
		return true, ""
	})
	t.Logf("adopted steady nodes replaced after the EC2NodeClass change at %.0fs", time.Since(start).Seconds())
	checkUntouched(t, instancesB)

	// Teardown drains every node, and a do-not-disrupt pod holds its node (as in Karpenter): its owner removes it.
	if err := ca.stack.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tkNamespace, Name: tkKeep}}); err != nil {
		t.Fatal(err)
	}
	// Teardown leaves nothing of a: no instance (adopted or launched since), no launch template its instances were
	// launched from.
	teardownAs(t, ca, "teardown-a")
	if left := instances(t, ca); len(left) != 0 {
		t.Errorf("cluster a: instances left after teardown: %v", left)
	}
	states := instanceStates(t, instancesA...)
	for id, st := range states {
		if st == "pending" || st == "running" {
			t.Errorf("cluster a: taken-over instance %s is %s after teardown", id, st)
		}
	}
	if left := existingTemplates(t, templatesA); len(left) != 0 {
		t.Errorf("cluster a: launch templates left after teardown: %v", left)
	}
	checkUntouched(t, instancesB)

	// b's controller adopts b's own instances when it comes back, and tears its cluster down.
	if err := cb.stack.StartController(ctx); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, timeout, time.Second, func(context.Context) (bool, string, error) {
		got := instances(t, cb)
		return slices.Equal(got, instancesB), fmt.Sprintf("b's instances with b's UID %v, want %v", got, instancesB), nil
	})
	if err != nil {
		t.Errorf("cluster b adopting its own instances: %v", err)
	}
	teardownAs(t, cb, "teardown-b")
	t.Logf("scenario done in %.0fs", time.Since(start).Seconds())
}

// applyPool applies a NodePool and EC2NodeClass named name (m5.large on demand, consolidation at once; policy, when
// set, replaces the example's consolidation policy).
func applyPool(t *testing.T, c *cluster, name, policy string, budgets []map[string]any) {
	t.Helper()
	objs, err := framework.NodePool(name, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "0s", ConsolidationPolicy: policy, Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(context.Background(), c.stack.Client, objs...); err != nil {
		t.Fatal(err)
	}
}

// applyPoolTypes applies a NodePool and EC2NodeClass named name allowing only the instance types, on demand.
func applyPoolTypes(t *testing.T, c *cluster, name string, types []string) {
	t.Helper()
	objs, err := framework.NodePool(name, framework.PoolOptions{InstanceTypes: types, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "0s", Budgets: []map[string]any{{"nodes": "100%"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(context.Background(), c.stack.Client, objs...); err != nil {
		t.Fatal(err)
	}
}

// instanceTypesPatch is a merge patch giving the NodePool's template these instance types (its other requirements
// as framework.NodePool writes them).
func instanceTypesPatch(t *testing.T, name string, types ...string) []byte {
	t.Helper()
	objs, err := framework.NodePool(name, framework.PoolOptions{InstanceTypes: types, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "0s", Budgets: []map[string]any{{"nodes": "100%"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "NodePool" {
			continue
		}
		reqs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "requirements")
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"requirements": reqs}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("framework.NodePool(%s) made no NodePool", name)
	return nil
}

// deployApart creates a Deployment of 1-CPU pods that refuse to share a node.
func deployApart(t *testing.T, c *cluster, name string, replicas int32) {
	t.Helper()
	d := framework.Deployment(tkNamespace, name, name, replicas, "1", "1Gi")
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	if err := c.stack.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// deploy creates a Deployment of 1-CPU pods (one to an m5.large node) on the pool.
func deploy(t *testing.T, c *cluster, name, nodePool string, replicas int32, doNotDisrupt bool) {
	t.Helper()
	d := framework.Deployment(tkNamespace, name, nodePool, replicas, "1", "1Gi")
	if doNotDisrupt {
		d.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	}
	if err := c.stack.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

func patch(t *testing.T, c *cluster, obj client.Object, body string) {
	t.Helper()
	if err := c.stack.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		t.Fatalf("cluster %s: patching %T %s: %v", c.name, obj, obj.GetName(), err)
	}
}

// waitNodes waits until the pool has exactly nodes registered NodeClaims and Nodes, every pod of the namespace on
// it is Running (pods of them), and extra (if any) agrees.
func waitNodes(t *testing.T, c *cluster, nodePool string, pods, nodes int, extra func([]karpv1.NodeClaim) (bool, string)) {
	t.Helper()
	err := framework.Poll(context.Background(), 4*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := c.stack.NodeClaims(ctx, nodePool)
		if err != nil {
			return false, "", err
		}
		ns, err := c.stack.Nodes(ctx, nodePool)
		if err != nil {
			return false, "", err
		}
		podList := &corev1.PodList{}
		if err := c.stack.Client.List(ctx, podList, client.InNamespace(tkNamespace)); err != nil {
			return false, "", err
		}
		running, total, pending := 0, 0, 0
		for _, p := range podList.Items {
			if p.Spec.NodeSelector[karpv1.NodePoolLabelKey] != nodePool || !p.DeletionTimestamp.IsZero() {
				continue
			}
			total++
			switch p.Status.Phase {
			case corev1.PodRunning:
				running++
			case corev1.PodPending:
				pending++
			}
		}
		registered := 0
		for _, nc := range claims {
			if nc.Status.NodeName != "" && nc.DeletionTimestamp.IsZero() {
				registered++
			}
		}
		status := fmt.Sprintf("pool %s: pods %d/%d running (%d pending); %d nodeclaims (%d registered), %d nodes", nodePool, running, total, pending, len(claims), registered, len(ns))
		if running != pods || total != pods || len(claims) != nodes || registered != nodes || len(ns) != nodes {
			return false, status, nil
		}
		if extra != nil {
			ok, why := extra(claims)
			return ok, status + "; " + why, nil
		}
		return true, status, nil
	})
	if err != nil {
		t.Fatalf("cluster %s: waiting for %d pods on %d nodes of %s: %v\n%s", c.name, pods, nodes, nodePool, err, c.stack.Describe(tkNamespace, nodePool))
	}
}

func claimNames(t *testing.T, c *cluster, nodePool string) []string {
	t.Helper()
	claims, err := c.stack.NodeClaims(context.Background(), nodePool)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, nc := range claims {
		out = append(out, nc.Name)
	}
	return out
}

func nodeOfPod(t *testing.T, c *cluster, app string) string {
	t.Helper()
	pods, err := c.stack.Pods(context.Background(), tkNamespace, map[string]string{"app": app})
	if err != nil || len(pods) != 1 || pods[0].Spec.NodeName == "" {
		t.Fatalf("cluster %s: the %s pod: %v (%d pods)", c.name, app, err, len(pods))
	}
	return pods[0].Spec.NodeName
}

// karpenterize leaves the cluster as Karpenter v1.14 leaves one: no cluster-UID tag on its instances and launch
// templates, Karpenter's hash versions on NodePools (v3), EC2NodeClasses (v5) and NodeClaims. poolHashes gives each
// pool's Karpenter hash, stamped on the pool, its EC2NodeClass and their NodeClaims alike.
func karpenterize(t *testing.T, c *cluster, poolHashes map[string]string) {
	t.Helper()
	ctx := context.Background()
	var resources []string
	resources = append(resources, instances(t, c)...)
	resources = append(resources, launchTemplateIDs(t, c)...)
	if _, err := a.EC2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: resources, Tags: []ec2types.Tag{{Key: awssdk.String(uidTag)}}}); err != nil {
		t.Fatalf("cluster %s: removing the UID tag: %v", c.name, err)
	}
	for pool, hash := range poolHashes {
		stamps := map[string]string{
			karpv1.NodePoolHashAnnotationKey: hash, karpv1.NodePoolHashVersionAnnotationKey: "v3",
			awsv1.AnnotationEC2NodeClassHash: hash + "-class", awsv1.AnnotationEC2NodeClassHashVersion: "v5",
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": stamps}})
		if err != nil {
			t.Fatal(err)
		}
		patch(t, c, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}, string(body))
		patch(t, c, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, string(body))
		for _, name := range claimNames(t, c, pool) {
			patch(t, c, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}, string(body))
		}
	}
}

// launchTemplateIDs returns the ids of the launch templates tagged with the cluster's UID.
func launchTemplateIDs(t *testing.T, c *cluster) []string {
	t.Helper()
	out, err := a.EC2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:" + uidTag), Values: []string{c.uid}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, lt := range out.LaunchTemplates {
		ids = append(ids, awssdk.ToString(lt.LaunchTemplateId))
	}
	slices.Sort(ids)
	return ids
}

// templatesOf returns the launch templates the instances were launched from (EC2's aws:ec2launchtemplate:id tag).
func templatesOf(t *testing.T, ids []string) []string {
	t.Helper()
	out, err := a.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	var lts []string
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if lt := tagValue(i.Tags, "aws:ec2launchtemplate:id"); lt != "" && !slices.Contains(lts, lt) {
				lts = append(lts, lt)
			}
		}
	}
	if len(lts) == 0 {
		t.Fatalf("no instance of %v names its launch template", ids)
	}
	slices.Sort(lts)
	return lts
}

func tagValue(tags []ec2types.Tag, key string) string {
	for _, tag := range tags {
		if awssdk.ToString(tag.Key) == key {
			return awssdk.ToString(tag.Value)
		}
	}
	return ""
}

// existingTemplates returns those of ids that still exist.
func existingTemplates(t *testing.T, ids []string) []string {
	t.Helper()
	out, err := a.EC2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, lt := range out.LaunchTemplates {
		if id := awssdk.ToString(lt.LaunchTemplateId); slices.Contains(ids, id) {
			left = append(left, id+" ("+awssdk.ToString(lt.LaunchTemplateName)+")")
		}
	}
	return left
}

func instanceStates(t *testing.T, ids ...string) map[string]string {
	t.Helper()
	states, err := a.InstanceStates(context.Background(), ids...)
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// checkUntouched: the other cluster's instances all still run, with no cluster UID (its controller is stopped).
func checkUntouched(t *testing.T, ids []string) {
	t.Helper()
	out, err := a.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			n++
			if st := i.State.Name; st != ec2types.InstanceStateNameRunning {
				t.Errorf("cluster b's instance %s is %s", awssdk.ToString(i.InstanceId), st)
			}
			for _, tag := range i.Tags {
				if awssdk.ToString(tag.Key) == uidTag {
					t.Errorf("cluster b's instance %s was tagged %s=%s while its controller was stopped", awssdk.ToString(i.InstanceId), uidTag, awssdk.ToString(tag.Value))
				}
			}
		}
	}
	if n != len(ids) {
		t.Errorf("%d of cluster b's %d instances described", n, len(ids))
	}
}

// checkKept: the do-not-disrupt pod's node is still there and marked drifted.
func checkKept(t *testing.T, c *cluster, node string) {
	t.Helper()
	claims, err := c.stack.NodeClaims(context.Background(), tkDrift)
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims {
		if nc.Status.NodeName == node {
			if !nc.IsTrue(karpv1.ConditionTypeDrifted) {
				t.Errorf("the do-not-disrupt pod's nodeclaim %s is not marked Drifted: %+v", nc.Name, nc.Status.Conditions)
			}
			return
		}
	}
	t.Errorf("no nodeclaim of pool %s runs node %s", tkDrift, node)
}

// teardownAs runs `dovetailctl teardown` against the cluster, naming caller in the simulator's call log.
func teardownAs(t *testing.T, c *cluster, caller string) {
	t.Helper()
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctl, "teardown", "--kubeconfig", c.stack.Kubeconfig, "--cluster-name", "dovetail",
		"--timeout", "3m", "--interval", "2s")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+c.stack.AWSEndpoint, "AWS_REGION="+framework.Region,
		"AWS_ACCESS_KEY_ID=123456789012", "AWS_SECRET_ACCESS_KEY=local-simulator", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_SDK_UA_APP_ID="+caller)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("dovetailctl teardown of cluster %s: %v\n%s", c.name, err, out.String())
	}
	if !strings.Contains(out.String(), "step 5/5") {
		t.Errorf("dovetailctl teardown of cluster %s printed no leftover check:\n%s", c.name, out.String())
	}
	t.Logf("dovetailctl teardown of cluster %s:\n%s", c.name, out.String())
}
