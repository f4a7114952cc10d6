//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

var providerIDPattern = regexp.MustCompile(`^aws:///us-west-2[a-c]/i-[0-9a-f]+$`)

// TestWalkingSkeleton takes pending pods to Running on nodes Dovetail launched in the AWS simulator, checks what
// the NodeClaims, Nodes and instances say, then deletes the NodePool and checks that nothing is left behind.
func TestWalkingSkeleton(t *testing.T) {
	ctx := context.Background()
	const name, ns = "skeleton", "skeleton"
	c := env.Client
	if err := framework.EnsureNamespace(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.ExampleNodePool(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, c, objs...); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, framework.Deployment(ns, "app", name, 5, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}

	err = framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, c, ns, client.MatchingLabels{"app": "app"})
		return p.Done(), p.String(), err
	})
	if err != nil {
		t.Fatalf("pods did not become Running: %v", err)
	}

	claims := &karpv1.NodeClaimList{}
	if err := c.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) == 0 {
		t.Fatal("no NodeClaims for the NodePool")
	}
	instanceIDs := map[string]string{} // instance id -> nodeclaim name
	for _, nc := range claims.Items {
		for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
			if !meta.IsStatusConditionTrue(nc.Status.Conditions, cond) {
				t.Errorf("nodeclaim %s: condition %s is not True: %+v", nc.Name, cond, meta.FindStatusCondition(nc.Status.Conditions, cond))
			}
		}
		if !providerIDPattern.MatchString(nc.Status.ProviderID) {
			t.Errorf("nodeclaim %s: providerID %q does not look like aws:///<zone>/<instance-id>", nc.Name, nc.Status.ProviderID)
		}
		if nc.Status.NodeName == "" {
			t.Errorf("nodeclaim %s: status.nodeName is empty", nc.Name)
			continue
		}
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
			t.Errorf("nodeclaim %s: node %s: %v", nc.Name, nc.Status.NodeName, err)
			continue
		}
		checkNode(t, node, &nc, name)
		instanceIDs[nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]] = nc.Name
	}
	checkInstanceTags(ctx, t, instanceIDs, claims, name)

	// Deleting the NodePool leaves no NodeClaim, no Node and no running instance.
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, pool); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		left := &karpv1.NodeClaimList{}
		if err := c.List(ctx, left, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
			return false, "", err
		}
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
			return false, "", err
		}
		live, err := liveInstances(ctx, instanceIDs)
		if err != nil {
			return false, "", err
		}
		status := fmt.Sprintf("%d nodeclaims, %d nodes, live instances %v", len(left.Items), len(nodes.Items), live)
		return len(left.Items) == 0 && len(nodes.Items) == 0 && len(live) == 0, status, nil
	})
	if err != nil {
		t.Fatalf("after deleting the NodePool: %v", err)
	}
}

func checkNode(t *testing.T, node *corev1.Node, nc *karpv1.NodeClaim, pool string) {
	t.Helper()
	if node.Spec.ProviderID != nc.Status.ProviderID {
		t.Errorf("node %s: providerID %q, nodeclaim says %q", node.Name, node.Spec.ProviderID, nc.Status.ProviderID)
	}
	want := map[string]func(string) bool{
		karpv1.NodePoolLabelKey:               func(v string) bool { return v == pool },
		corev1.LabelInstanceTypeStable:        func(v string) bool { return v != "" },
		corev1.LabelTopologyZone:              func(v string) bool { return strings.HasPrefix(v, "us-west-2") },
		karpv1.CapacityTypeLabelKey:           func(v string) bool { return v == "spot" || v == "on-demand" },
		corev1.LabelArchStable:                func(v string) bool { return v == "amd64" },
		"karpenter.sh/registered":             func(v string) bool { return v == "true" },
		"karpenter.sh/initialized":            func(v string) bool { return v == "true" },
		"karpenter.k8s.aws/instance-category": func(v string) bool { return v == "c" || v == "m" || v == "r" },
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := node.Labels[k]; !ok || !want[k](v) {
			t.Errorf("node %s: label %s=%q is missing or wrong", node.Name, k, v)
		}
	}
	for _, taint := range node.Spec.Taints {
		switch taint.Key {
		case "karpenter.sh/unregistered", "node.cloudprovider.kubernetes.io/uninitialized":
			t.Errorf("node %s: taint %s is still present", node.Name, taint.Key)
		}
	}
	if !hasFinalizer(node.Finalizers, "karpenter.sh/termination") {
		t.Errorf("node %s: finalizer karpenter.sh/termination missing: %v", node.Name, node.Finalizers)
	}
}

func hasFinalizer(fs []string, f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

func checkInstanceTags(ctx context.Context, t *testing.T, ids map[string]string, claims *karpv1.NodeClaimList, pool string) {
	t.Helper()
	nodeOf := map[string]string{}
	for _, nc := range claims.Items {
		nodeOf[nc.Name] = nc.Status.NodeName
	}
	err := framework.Poll(ctx, 30*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		out, err := env.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: keys(ids)})
		if err != nil {
			return false, "", fmt.Errorf("DescribeInstances: %w", err)
		}
		var problems []string
		seen := 0
		for _, r := range out.Reservations {
			for _, inst := range r.Instances {
				seen++
				claim := ids[aws.ToString(inst.InstanceId)]
				want := map[string]string{
					"karpenter.sh/nodepool":          pool,
					"karpenter.sh/nodeclaim":         claim,
					"karpenter.k8s.aws/ec2nodeclass": pool,
					"kubernetes.io/cluster/dovetail": "owned",
					"Name":                           nodeOf[claim],
				}
				got := tagMap(inst.Tags)
				for k, v := range want {
					if got[k] != v {
						problems = append(problems, fmt.Sprintf("%s: tag %s=%q, want %q", aws.ToString(inst.InstanceId), k, got[k], v))
					}
				}
			}
		}
		if seen != len(ids) {
			problems = append(problems, fmt.Sprintf("simulator returned %d of %d instances", seen, len(ids)))
		}
		sort.Strings(problems)
		return len(problems) == 0, strings.Join(problems, "; "), nil
	})
	if err != nil {
		t.Errorf("instance tags: %v", err)
	}
}

// liveInstances returns the ids among ids whose instances are neither shutting down nor terminated.
func liveInstances(ctx context.Context, ids map[string]string) ([]string, error) {
	out, err := env.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: keys(ids)}},
	})
	if err != nil {
		return nil, fmt.Errorf("DescribeInstances: %w", err)
	}
	var live []string
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			switch inst.State.Name {
			case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
			default:
				live = append(live, aws.ToString(inst.InstanceId)+"("+string(inst.State.Name)+")")
			}
		}
	}
	sort.Strings(live)
	return live, nil
}

func tagMap(tags []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
