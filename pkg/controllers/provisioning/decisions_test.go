package provisioning

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
	"github.com/dovetail/dovetail/pkg/threadcpu"
)

func podUID(uid string) *corev1.Pod {
	p := &corev1.Pod{}
	p.UID = types.UID(uid)
	return p
}

// TestDecisionTimes: a pod is observed once, from when it was first seen to the first pass that had it; a pod
// the trigger did not see is not observed; pods no longer pending are forgotten, but not pods seen after the
// pass began.
func TestDecisionTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	d := newDecisionTimes()
	d.ack("a", t0)
	d.ack("a", t0.Add(time.Second)) // seen again: the first sighting counts
	got := d.decide([]*corev1.Pod{podUID("a"), podUID("unseen")}, t0, t0.Add(3*time.Second))
	if diff := cmp.Diff([]time.Duration{3 * time.Second}, got); diff != "" {
		t.Errorf("first pass (-want +got):\n%s", diff)
	}
	d.ack("a", t0.Add(4*time.Second)) // still pending, decided: not seen anew
	d.ack("late", t0.Add(6*time.Second))
	if got := d.decide([]*corev1.Pod{podUID("a")}, t0.Add(5*time.Second), t0.Add(7*time.Second)); len(got) != 0 {
		t.Errorf("second pass observed %v, want nothing (a decided before, late not in the pass)", got)
	}
	if _, ok := d.seen["late"]; !ok {
		t.Error("a pod seen after the pass began was forgotten")
	}
	d.decide(nil, t0.Add(10*time.Second), t0.Add(10*time.Second))
	if len(d.seen) != 0 || len(d.decided) != 0 {
		t.Errorf("entries of pods no longer pending kept: seen %v decided %v", d.seen, d.decided)
	}
}

// TestSchedulingDecisionObserved: a pending pod the trigger saw is observed once when a pass decides on it.
func TestSchedulingDecisionObserved(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), pod).Build()
	c, _ := newTestController(api)
	if _, err := c.reconcilePod(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Schedule(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := histogramCount(t, c); n != 1 {
		t.Errorf("karpenter_pods_scheduling_decision_duration_seconds has %d observations after two passes, want 1", n)
	}
}

func histogramCount(t *testing.T, c *Controller) uint64 {
	t.Helper()
	return observations(t, c.deps.Metrics.PodsSchedulingDecisionDuration)
}

// observations is how many values a histogram holds.
func observations(t *testing.T, h prometheus.Metric) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := h.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestPassTimesRecorded: a pass that solves records its wall time and, where the thread's CPU clock is read, its
// CPU time; a pass with nothing pending solves nothing and records neither.
func TestPassTimesRecorded(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), pod).Build()
	c, _ := newTestController(api)
	m := c.deps.Metrics
	counts := func() [2]uint64 {
		wall, err := m.SchedulingDuration.GetMetricWithLabelValues(Name)
		if err != nil {
			t.Fatal(err)
		}
		return [2]uint64{observations(t, wall.(prometheus.Metric)), observations(t, m.SchedulingCPU)}
	}
	want := [2]uint64{1, 1}
	if _, ok := threadcpu.Now(); !ok {
		want[1] = 0
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != want {
		t.Errorf("after a pass with a pending pod: [wall, cpu] observations = %v, want %v", got, want)
	}
	if err := api.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != want {
		t.Errorf("after a pass with nothing pending: [wall, cpu] observations = %v, want %v", got, want)
	}
}

// TestSchedulingMomentsRecorded: the trigger records when it first saw each pending pod and a pass when it decided
// on each, with a schedulable time only for the pods it found a place for (karpenter_pods_provisioning_*).
func TestSchedulingMomentsRecorded(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	fits := test.Pod("fits").Requests("1", "1Gi").Unschedulable().Obj()
	huge := test.Pod("huge").Requests("100000", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), fits, huge).Build()
	c, _ := newTestController(api)
	for _, p := range []*corev1.Pod{fits, huge} {
		if _, err := c.reconcilePod(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			t.Fatal(err)
		}
		if got, ok := c.deps.Metrics.Pods.Times.Get(client.ObjectKeyFromObject(p), p.UID); !ok || got.Acked.IsZero() || !got.Decided.IsZero() {
			t.Errorf("%s after the trigger: %+v (recorded %v), want acked and undecided", p.Name, got, ok)
		}
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod         *corev1.Pod
		schedulable bool
	}{{fits, true}, {huge, false}} {
		got, ok := c.deps.Metrics.Pods.Times.Get(client.ObjectKeyFromObject(tc.pod), tc.pod.UID)
		if !ok || got.Decided.IsZero() || got.Schedulable.IsZero() != !tc.schedulable {
			t.Errorf("%s after a pass: %+v (recorded %v), want decided, schedulable %v", tc.pod.Name, got, ok, tc.schedulable)
		}
	}
}
