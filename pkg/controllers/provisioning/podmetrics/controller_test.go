package podmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

func running(name, node string, created, started time.Time) *corev1.Pod {
	p := test.Pod(name).NodeName(node).Phase(corev1.PodRunning).Obj()
	p.UID = types.UID("uid-" + name)
	p.CreationTimestamp = metav1.NewTime(created)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
		Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
	return p
}

func TestStartupDuration(t *testing.T) {
	created := time.Unix(1000, 0)
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		test.Node("ours", "fake:///a/i-1").Label(karpv1.NodeRegisteredLabelKey, "true").Obj(),
		test.Node("theirs", "fake:///a/i-2").Obj(),
		running("on-ours", "ours", created, created.Add(42*time.Second)),
		running("on-theirs", "theirs", created, created.Add(7*time.Second)),
		test.Pod("pending").Obj(),
	).Build()
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, Metrics: m})
	for _, name := range []string{"on-ours", "on-ours", "on-theirs", "pending", "missing"} {
		if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}); err != nil {
			t.Fatalf("Reconcile %s: %v", name, err)
		}
	}
	if got, want := startupSummary(t, m), [2]float64{1, 42}; got != want {
		t.Errorf("startup summary (count, sum) = %v, want %v", got, want)
	}
}

// TestDeletedPodIsForgotten: a pod's deletion forgets it (nothing is kept of pods gone), and a pod created again
// under the same name (a new UID) has its startup observed again.
func TestDeletedPodIsForgotten(t *testing.T) {
	ctx := context.Background()
	created := time.Unix(1000, 0)
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	first := running("web", "ours", created, created.Add(10*time.Second))
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		test.Node("ours", "fake:///a/i-1").Label(karpv1.NodeRegisteredLabelKey, "true").Obj(), first).Build()
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, Metrics: m})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}}
	reconcileTwice := func() {
		t.Helper()
		for range 2 {
			if _, err := c.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	reconcileTwice()
	if err := kube.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	reconcileTwice()
	if len(c.seen) != 0 {
		t.Errorf("after the deletion the controller keeps %v", c.seen)
	}
	again := running("web", "ours", created, created.Add(20*time.Second))
	again.UID = "uid-web-2"
	if err := kube.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	reconcileTwice()
	if got, want := startupSummary(t, m), [2]float64{2, 30}; got != want {
		t.Errorf("startup summary (count, sum) = %v, want %v (each pod once)", got, want)
	}
}

// startupSummary returns the count and sum of karpenter_pods_startup_duration_seconds.
func startupSummary(t *testing.T, m *metrics.Metrics) [2]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	m.PodsStartupDuration.Collect(ch)
	var out dto.Metric
	if err := (<-ch).Write(&out); err != nil {
		t.Fatal(err)
	}
	return [2]float64{float64(out.GetSummary().GetSampleCount()), out.GetSummary().GetSampleSum()}
}

// TestPodStateAndBindTime: every pod has a karpenter_pods_state entry with its node's labels, a pod seen unbound
// and then bound observes its bind time once, and a deleted pod's entry goes.
func TestPodStateAndBindTime(t *testing.T) {
	ctx := context.Background()
	created := time.Unix(1000, 0)
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pod := test.Pod("web").Phase(corev1.PodPending).Obj()
	pod.CreationTimestamp = metav1.NewTime(created)
	pod.UID = "uid-web"
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		test.Node("ip-1", "fake:///a/i-1").Label(karpv1.NodePoolLabelKey, "web").Obj(), pod).Build()
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, Metrics: m})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The provisioner saw the pod 2 s after its creation and a pass found it a place 5 s after.
	m.Pods.Times.Ack(req.NamespacedName, pod.UID, created.Add(2*time.Second))
	m.Pods.Times.Decide(req.NamespacedName, pod.UID, created.Add(5*time.Second), true)
	bound := pod.DeepCopy()
	if err := kube.Get(ctx, req.NamespacedName, bound); err != nil {
		t.Fatal(err)
	}
	bound.Spec.NodeName = "ip-1"
	bound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(12 * time.Second))}}
	if err := kube.Update(ctx, bound); err != nil {
		t.Fatal(err)
	}
	bound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(12 * time.Second))}}
	if err := kube.Status().Update(ctx, bound); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.CollectAndCount(m.Pods, "karpenter_pods_state"); got != 1 {
		t.Errorf("karpenter_pods_state series = %d, want 1", got)
	}
	for _, h := range []struct {
		name      string
		histogram prometheus.Metric
		sum       float64
	}{
		{"karpenter_pods_bound_duration_seconds", m.PodsBoundDuration.WithLabelValues("false").(prometheus.Metric), 12},
		{"karpenter_pods_provisioning_bound_duration_seconds", m.PodsProvisioningBoundDuration.WithLabelValues("false").(prometheus.Metric), 7},
	} {
		if count, sum := histogram(t, h.histogram); count != 1 || sum != h.sum {
			t.Errorf("%s: count %d sum %v, want 1 and %v", h.name, count, sum, h.sum)
		}
	}
	if count, _ := histogram(t, m.PodsProvisioningStartupDuration); count != 0 {
		t.Errorf("provisioning startup observed %d times before the pod is ready, want 0", count)
	}
	// Ready 20 s after its creation: 15 s after the pass, observed once; the pod's moments are forgotten.
	bound.Status.Phase = corev1.PodRunning
	bound.Status.Conditions = append(bound.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(created.Add(20 * time.Second))})
	if err := kube.Status().Update(ctx, bound); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if count, sum := histogram(t, m.PodsProvisioningStartupDuration); count != 1 || sum != 15 {
		t.Errorf("karpenter_pods_provisioning_startup_duration_seconds: count %d sum %v, want 1 and 15", count, sum)
	}
	if _, ok := m.Pods.Times.Get(req.NamespacedName, pod.UID); ok {
		t.Error("the ready pod's scheduling moments are kept")
	}
	if err := kube.Delete(ctx, bound); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := m.Pods.Len(); got != 0 {
		t.Errorf("%d pod entries after the deletion, want 0", got)
	}
}

// histogram returns a histogram's sample count and sum.
func histogram(t *testing.T, h prometheus.Metric) (uint64, float64) {
	t.Helper()
	m := &dto.Metric{}
	if err := h.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
