//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDoNotDisruptHonoursGracePeriod (scenario 2): a pod annotated karpenter.sh/do-not-disrupt keeps its node
// when the NodeClaim is deleted, until the NodeClaim's terminationGracePeriod (30 s) runs out; then it is deleted
// with no more than the time left, and the instance goes.
//
// The pod's own terminationGracePeriodSeconds is 1 s. As in Karpenter (docs/termination.md, "Deadline
// arithmetic"), a pod still on the node is deleted at deadline − its own grace period so that it has shut down
// by the deadline: a pod with the default 30 s would be deleted at once and given the whole 30 s (kwok, unlike a
// kubelet, removes a deleted pod at once, so the test could not tell). With 1 s the deletion is due 28–29 s
// after the NodeClaim's (the deadline counts from its deletionTimestamp, in whole seconds) and the pod has gone
// when the 30 s are up.
func TestDoNotDisruptHonoursGracePeriod(t *testing.T) {
	ctx := context.Background()
	const pool = "dnd"
	setupPool(t, pool, framework.PoolOptions{TerminationGracePeriod: "30s"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "precious", Labels: map[string]string{"app": "precious"},
			Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: karpv1.DoNotDisruptValue}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "precious"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	instance := framework.InstanceID(claim.Status.ProviderID)
	deleted := time.Now()
	if err := env.Client.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}

	// For 27.5 s the pod stays, not even terminating, and so does its instance.
	const hold = 27500 * time.Millisecond
	err := framework.Consistently(ctx, hold-time.Since(deleted), time.Second, func(ctx context.Context) error {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
			return fmt.Errorf("%.1fs after the NodeClaim's deletion: getting the pod: %w", time.Since(deleted).Seconds(), err)
		}
		if p.DeletionTimestamp != nil {
			return fmt.Errorf("do-not-disrupt pod deleted %.1fs after the NodeClaim, before its terminationGracePeriod ran out",
				time.Since(deleted).Seconds())
		}
		states, err := env.InstanceStates(ctx, instance)
		if err != nil {
			return err
		}
		if s := states[instance]; s != "running" {
			return fmt.Errorf("instance %s is %q %.1fs after the NodeClaim's deletion, while its do-not-disrupt pod still runs",
				instance, s, time.Since(deleted).Seconds())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The drain says why it waits: an event on the pod names the annotation.
	events, err := env.Events(ctx, pool, "Pod", pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !anyContains(events, "DisruptionBlocked: ", karpv1.DoNotDisruptAnnotationKey) {
		t.Errorf("no DisruptionBlocked event on the pod naming %s; events: %q", karpv1.DoNotDisruptAnnotationKey, events)
	}

	// Then the pod is deleted, by the end of the grace period and with no more than the time left.
	var gone time.Duration
	err = framework.Poll(ctx, 40*time.Second-time.Since(deleted), 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), p)
		if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
			gone = time.Since(deleted)
			return true, "", nil
		}
		return false, fmt.Sprintf("pod still there %.0fs after the NodeClaim's deletion", time.Since(deleted).Seconds()), err
	})
	if err != nil {
		t.Fatalf("do-not-disrupt pod not deleted within 40s of the NodeClaim (terminationGracePeriod 30s): %v", err)
	}
	t.Logf("do-not-disrupt pod deleted %.1fs after the NodeClaim", gone.Seconds())
	// The deletion gave the pod no more than the time left (its own 1 s at most, rounded down to whole seconds).
	graceRE := regexp.MustCompile(`^Disrupted: .* with a (\d+)s grace period`)
	err = framework.Poll(ctx, 10*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		events, err := env.Events(ctx, pool, "Pod", pod.Name)
		if err != nil {
			return false, "", err
		}
		for _, e := range events {
			if m := graceRE.FindStringSubmatch(e); m != nil {
				if n, _ := strconv.Atoi(m[1]); n > 1 {
					return false, "", fmt.Errorf("pod deleted with a %ds grace period, more than its own 1s: %s", n, e)
				}
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("events: %q", events), nil
	})
	if err != nil {
		t.Errorf("no Disrupted event on the pod: %v", err)
	}

	// And the instance and the NodeClaim go.
	err = framework.Poll(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		states, err := env.InstanceStates(ctx, instance)
		if err != nil {
			return false, "", err
		}
		nc := &karpv1.NodeClaim{}
		err = env.Client.Get(ctx, client.ObjectKeyFromObject(&claim), nc)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		s := states[instance]
		return apierrors.IsNotFound(err) && (s == "" || s == "shutting-down" || s == "terminated"),
			fmt.Sprintf("instance %q, nodeclaim found=%v", s, err == nil), nil
	})
	if err != nil {
		t.Errorf("after the grace period: %v", err)
	}
}

// anyContains reports whether one of the lines starts with prefix and contains sub.
func anyContains(lines []string, prefix, sub string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
