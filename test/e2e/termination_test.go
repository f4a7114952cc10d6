//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestNodeAgentsOutliveVolumes (scenario 1): deleting a NodeClaim never evicts the node's DaemonSet pods (CSI- and
// CNI-like agents that do not tolerate the disrupted taint), and the instance is not terminated while a
// VolumeAttachment to the node exists; it is terminated right after the attachment goes.
func TestNodeAgentsOutliveVolumes(t *testing.T) {
	ctx := context.Background()
	const pool = "agents"
	setupPool(t, pool, framework.PoolOptions{})
	c := env.Client
	if err := c.Create(ctx, framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"csi-node", "cni-node"} {
		if err := c.Create(ctx, daemonSet(pool, agent, pool)); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	node := claim.Status.NodeName
	instance := framework.InstanceID(claim.Status.ProviderID)
	agentPods := map[string]string{} // pod name -> UID
	err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, map[string]string{"role": "agent"})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
				agentPods[p.Name] = string(p.UID)
			}
		}
		return len(agentPods) == 2, fmt.Sprintf("%d agent pods running on %s", len(agentPods), node), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "agents-volume"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com",
			NodeName: node,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("agents-pv")},
		},
	}
	if err := c.Create(ctx, va); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), va) })

	if err := c.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	// The ordinary pod is evicted; the agents stay; the instance keeps running while the attachment exists.
	agentsIntact := func(ctx context.Context) error {
		pods, err := env.Pods(ctx, pool, map[string]string{"role": "agent"})
		if err != nil {
			return err
		}
		seen := 0
		for _, p := range pods {
			if uid, ok := agentPods[p.Name]; ok && uid == string(p.UID) {
				if p.DeletionTimestamp != nil {
					return fmt.Errorf("agent pod %s is being deleted while its node's instance still runs", p.Name)
				}
				seen++
			}
		}
		if seen != len(agentPods) {
			return fmt.Errorf("only %d of %d agent pods left while the instance still runs", seen, len(agentPods))
		}
		return nil
	}
	err = framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		if err := agentsIntact(ctx); err != nil {
			return false, "", err
		}
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "app"})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			if p.Spec.NodeName == node {
				return false, "app pod still on the node", nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("draining: %v", err)
	}
	// Held for a while by the attachment, with a message naming it.
	err = framework.Consistently(ctx, 10*time.Second, time.Second, func(ctx context.Context) error {
		if err := agentsIntact(ctx); err != nil {
			return err
		}
		states, err := env.InstanceStates(ctx, instance)
		if err != nil {
			return err
		}
		if s := states[instance]; s != "running" {
			return fmt.Errorf("instance %s is %q while VolumeAttachment %s still exists", instance, s, va.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 30*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		msgs, err := mentions(ctx, claim.Name, node, va.Name)
		return len(msgs) > 0, "no condition or event on the NodeClaim or Node names " + va.Name, err
	}); err != nil {
		t.Errorf("no explanation of the wait: %v", err)
	}

	if err := c.Delete(ctx, va); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	err = framework.Poll(ctx, 30*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		states, err := env.InstanceStates(ctx, instance)
		if err != nil {
			return false, "", err
		}
		s := states[instance]
		if s == "running" || s == "pending" {
			if err := agentsIntact(ctx); err != nil {
				return false, "", err
			}
		}
		return s == "shutting-down" || s == "terminated" || s == "", "instance " + s, nil
	})
	if err != nil {
		t.Fatalf("instance not terminated after the VolumeAttachment was removed: %v", err)
	}
	t.Logf("instance terminated %.1fs after the VolumeAttachment was removed", time.Since(removed).Seconds())
}

// mentions returns the NodeClaim condition messages and the NodeClaim/Node events that mention what.
func mentions(ctx context.Context, claim, node, what string) ([]string, error) {
	var out []string
	nc := &karpv1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim}, nc); err == nil {
		for _, c := range nc.Status.Conditions {
			if strings.Contains(c.Message, what) {
				out = append(out, c.Type+": "+c.Message)
			}
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	for _, obj := range []struct{ kind, name string }{{"NodeClaim", claim}, {"Node", node}} {
		for _, ns := range []string{"default", ""} {
			evs, err := env.Events(ctx, ns, obj.kind, obj.name)
			if err != nil {
				return nil, err
			}
			for _, e := range evs {
				if strings.Contains(e, what) {
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

func daemonSet(namespace, name, pool string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name, "role": "agent"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{karpv1.NodePoolLabelKey: pool},
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"),
						}},
					}},
				},
			},
		},
	}
}
