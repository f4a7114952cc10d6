package capacitybuffer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail/dovetail/pkg/controllers/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestResolvesBuffers runs the controller on a real API server: a buffer whose PodTemplate does not exist yet says
// so and holds no room; once the PodTemplate exists it resolves to 3 virtual pods; a workload-backed buffer
// follows its Deployment's replicas; deleting a buffer drops its pods.
func TestResolvesBuffers(t *testing.T) {
	buffers := deps.NewBuffers()
	env := test.StartControllerEnv(t, func(d deps.Deps) test.Registrar {
		d.Buffers = buffers
		return capacitybuffer.NewController(d)
	})
	ctx := context.Background()
	kube := env.Client
	status := func(name string) (string, *int32) {
		cb := &autoscalingv1beta1.CapacityBuffer{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cb); err != nil {
			return err.Error(), nil
		}
		c := meta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
		if c == nil {
			return "none", cb.Status.Replicas
		}
		return string(c.Status) + "/" + c.Reason, cb.Status.Replicas
	}
	podsOf := func(key string) int {
		n := 0
		for _, p := range buffers.Pods() {
			if p.Annotations["karpenter.sh/capacity-buffer-namespace"]+"/"+p.Annotations["karpenter.sh/capacity-buffer-name"] == key {
				n++
			}
		}
		return n
	}

	cb := test.CapacityBuffer("default", "spare").PodTemplate("shape").Replicas(3).Obj()
	cb.UID = ""
	must(t, kube.Create(ctx, cb))
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		s, r := status("spare")
		return s == "False/PodTemplateNotFound" && r == nil, fmt.Sprintf("%s replicas %v", s, r)
	})
	if n := podsOf("default/spare"); n != 0 {
		t.Errorf("unresolved buffer has %d virtual pods", n)
	}

	must(t, kube.Create(ctx, test.PodTemplate("default", "shape", "1", "2Gi")))
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		s, r := status("spare")
		return s == "True/Resolved" && r != nil && *r == 3 && podsOf("default/spare") == 3,
			fmt.Sprintf("%s replicas %v pods %d", s, r, podsOf("default/spare"))
	})
	got := &autoscalingv1beta1.CapacityBuffer{}
	must(t, kube.Get(ctx, client.ObjectKeyFromObject(cb), got))
	if got.Status.PodTemplateRef == nil || got.Status.PodTemplateRef.Name != "shape" || got.Status.PodTemplateGeneration == nil {
		t.Errorf("status podTemplateRef %v generation %v", got.Status.PodTemplateRef, got.Status.PodTemplateGeneration)
	}

	// A Deployment-backed buffer: 50% of 4 replicas, then of 10.
	tpl := test.PodTemplate("default", "web", "500m", "1Gi").Template
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}, Template: tpl}}
	must(t, kube.Create(ctx, dep))
	wb := test.CapacityBuffer("default", "headroom").Scalable("Deployment", "web").Percentage(50).Obj()
	wb.UID = ""
	must(t, kube.Create(ctx, wb))
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		s, r := status("headroom")
		return s == "True/Resolved" && r != nil && *r == 2, fmt.Sprintf("%s replicas %v", s, r)
	})
	must(t, kube.Get(ctx, client.ObjectKeyFromObject(dep), dep))
	dep.Spec.Replicas = ptr.To[int32](10)
	must(t, kube.Update(ctx, dep))
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		s, r := status("headroom")
		return r != nil && *r == 5 && podsOf("default/headroom") == 5, fmt.Sprintf("%s replicas %v pods %d", s, r, podsOf("default/headroom"))
	})

	must(t, kube.Delete(ctx, cb))
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		return podsOf("default/spare") == 0, fmt.Sprintf("%d pods left", podsOf("default/spare"))
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
