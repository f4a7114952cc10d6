//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestExplain: a pod bigger than its NodePool's cpu limit allows gets a FailedScheduling
// event naming the NodePool and the limit, and `dovetailctl explain pod` names the constraint and the fix;
// `dovetailctl explain node` names the do-not-disrupt pod that keeps a node.
func TestExplain(t *testing.T) {
	ctx := context.Background()
	const pool = "explain"
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Fatalf("%s: %v (run make build first)", ctl, err)
	}
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}})
	// the cpu limit leaves room for one small node only
	objs, err := framework.NodePool(pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "NodePool" {
			if err := unstructured.SetNestedField(o.Object, "4", "spec", "limits", "cpu"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}

	small := framework.Deployment(pool, "small", pool, 1, "100m", "128Mi")
	small.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	big := framework.Deployment(pool, "big", pool, 1, "8", "1Gi")
	for _, d := range []client.Object{small, big} {
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, pool, map[string]string{"app": "small"}, 1, 3*time.Minute)

	// the big pod's FailedScheduling event names the NodePool and its limit
	var bigPod, event string
	err = framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "big"})
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d big pods", len(pods)), err
		}
		bigPod = pods[0].Name
		events, err := env.Events(ctx, pool, "Pod", bigPod)
		if err != nil {
			return false, "", err
		}
		for _, e := range events {
			if strings.HasPrefix(e, "FailedScheduling: ") && strings.Contains(e, "nodepool "+pool+": ") && strings.Contains(e, "limits") {
				event = e
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("events %q", events), nil
	})
	if err != nil {
		t.Fatalf("waiting for the big pod's FailedScheduling event: %v", err)
	}
	t.Logf("event: %s", event)
	if want := "every instance type that fits would exceed NodePool " + pool + "'s limits"; !strings.Contains(event, want) {
		t.Errorf("event %q does not contain %q", event, want)
	}

	// instance types from the built-in catalog, then from the simulated AWS account as the controller sees them
	for _, args := range [][]string{{"explain", "pod", pool + "/" + bigPod}, {"explain", "pod", pool + "/" + bigPod, "--from-aws", "--cluster-name", "dovetail"}} {
		out := runCtl(t, ctl, args...)
		for _, want := range []string{
			"Outcome: unschedulable [Limits]",
			"NodePool " + pool + " (weight 0,",
			"reason: [Limits] every instance type that fits would exceed NodePool " + pool + "'s limits (cpu ",
			"fix:    raise NodePool " + pool + "'s limit cpu from 4 to at least ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", strings.Join(args, " "), want, out)
			}
		}
		if strings.Contains(out, "warning:") {
			t.Errorf("%s: unexpected warning:\n%s", strings.Join(args, " "), out)
		}
	}

	nodes, err := env.Nodes(ctx, pool)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("want the pool's one node, got %d (%v)", len(nodes), err)
	}
	out := runCtl(t, ctl, "explain", "node", nodes[0].Name)
	smallPods, err := env.Pods(ctx, pool, map[string]string{"app": "small"})
	if err != nil || len(smallPods) != 1 {
		t.Fatalf("small pods: %d (%v)", len(smallPods), err)
	}
	for _, want := range []string{
		"nodepool: " + pool + "  nodeclaim: " + pool + "-",
		"Why it stays:",
		"pod " + pool + "/" + smallPods[0].Name + " has karpenter.sh/do-not-disrupt=true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain node output lacks %q:\n%s", want, out)
		}
	}
}

// runCtl runs bin/dovetailctl against the stack and returns its standard output.
func runCtl(t *testing.T, ctl string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctl, append(args, "--kubeconfig", env.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+env.AWSEndpoint, "AWS_REGION=us-west-2", "AWS_ACCESS_KEY_ID=123456789012",
		"AWS_SECRET_ACCESS_KEY=local-simulator", "AWS_EC2_METADATA_DISABLED=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dovetailctl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("dovetailctl %s:\n%s", strings.Join(args, " "), stdout.String())
	return stdout.String()
}
