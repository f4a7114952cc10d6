//go:build e2e

package v115

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// TestVolumeAttachLimitsOneRound: 40 pods, each with a volume of its own on a CSI driver whose nodes attach at
// most 10, are provisioned in one pass: the controller launches the 4 nodes they need at once, and every pod
// runs without waiting for a second scale-out. By resources alone the 40 pods fit on one node, and the
// kube-scheduler (NodeVolumeLimits) puts no more than 10 of them on each, so a controller that ignored the limit
// would leave 30 pods pending for later passes.
//
// The stack has no CSI driver: the test plays the driver's node plugin (csiNodePlugin writes each node's CSINode
// with the limit and lifts the driver's startup taint, as the EBS CSI driver does), and the volumes are static
// PersistentVolumes of the driver behind a WaitForFirstConsumer StorageClass, bound when the kube-scheduler
// places their pods. The controller learns a new node's limit from the CSINodes of the existing nodes of the same
// instance type (AWS names no per-type limit): a node of the type, in another NodePool, already runs the driver.
// From a cluster with no such node it could not know the limit before the first node reports it.
func TestVolumeAttachLimitsOneRound(t *testing.T) {
	ctx := context.Background()
	const (
		pool, warmPool = "volumes", "volumes-warm"
		driver         = "ebs.csi.aws.com"
		agentNotReady  = "ebs.csi.aws.com/agent-not-ready"
		limit, pods    = 10, 40
		class          = "e2e-ebs"
	)
	taint := corev1.Taint{Key: agentNotReady, Effect: corev1.TaintEffectNoExecute}
	opts := framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"}, ConsolidateAfter: "Never"}
	setupPool(t, warmPool, opts, taint)
	setupPool(t, pool, opts, taint)
	csiNodePlugin(t, driver, limit, agentNotReady, warmPool, pool)

	// The driver needs no attach step here (no VolumeAttachments that nothing would ever attach or detach); its
	// nodes' attach limit is still enforced by the kube-scheduler.
	objs := []client.Object{
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: driver,
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer), ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain)},
	}
	for i := range pods {
		objs = append(objs, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-vol-%02d", i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              class,
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: driver, VolumeHandle: fmt.Sprintf("vol-%017d", i)}},
			},
		})
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// After the NodePools' cleanups (registered before): the pods and their claims are gone by then.
		for _, o := range objs {
			if err := env.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: deleting %s: %v", o.GetName(), err)
			}
		}
	})

	// A node of the type that runs the driver.
	if err := env.Client.Create(ctx, framework.Deployment(warmPool, "warm", warmPool, 1, "100m", "64Mi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, warmPool, map[string]string{"app": "warm"}, 1, 90*time.Second)

	start := time.Now()
	for i := range pods {
		name := fmt.Sprintf("data-%02d", i)
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(class),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: fmt.Sprintf("app-%02d", i), Labels: map[string]string{"app": "volumes"}},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
			},
		}
		for _, o := range []client.Object{pvc, pod} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitRunning(t, pool, map[string]string{"app": "volumes"}, pods, 2*time.Minute)
	t.Logf("%d pods with a volume each Running %.1fs after their creation", pods, time.Since(start).Seconds())

	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := pods / limit; len(claims) != want {
		t.Errorf("%d nodeclaims in nodepool %s, want %d (%d volumes, %d a node)", len(claims), pool, want, pods, limit)
	}
	first, last := time.Time{}, time.Time{}
	for _, nc := range claims {
		c := nc.CreationTimestamp.Time
		if first.IsZero() || c.Before(first) {
			first = c
		}
		if c.After(last) {
			last = c
		}
	}
	// One provisioning pass creates its NodeClaims together; a second scale-out would come after the first
	// nodes registered and the kube-scheduler found them full, tens of seconds later.
	if spread := last.Sub(first); spread > 5*time.Second {
		t.Errorf("nodeclaims created over %s, not in one provisioning pass", spread)
	}
	list, err := env.Pods(ctx, pool, map[string]string{"app": "volumes"})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range list {
		perNode[p.Spec.NodeName]++
	}
	for node, n := range perNode {
		if n > limit {
			t.Errorf("node %s runs %d pods with volumes, over the limit %d", node, n, limit)
		}
	}
}
