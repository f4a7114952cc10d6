package disruption_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// repairEnv turns node repair on (as a disruption method) with one policy, FakeHardwareReady=False tolerated 10
// minutes with a drain bound of 2 minutes, and creates NodePool "default" with an unhealthy node "sick" (its
// condition 11 minutes old) running a pod.
func repairEnv(t *testing.T, annotate map[string]string) *test.ControllerEnv {
	t.Helper()
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	e.Deps.Settings.FeatureGates[settings.FeatureNodeRepair] = true
	bound := 2 * time.Minute
	e.Cloud.SetRepairPolicies([]cloudprovider.RepairPolicy{{ConditionType: "FakeHardwareReady", ConditionStatus: corev1.ConditionFalse,
		TolerationDuration: 10 * time.Minute, TerminationGracePeriod: &bound}})
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Obj()); err != nil {
		t.Fatal(err)
	}
	clusterNode(t, e, "sick", "8", "16Gi", nil)
	bindPod(t, e, "web", "1", "sick")
	n := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, n); err != nil {
		t.Fatal(err)
	}
	since := metav1.NewTime(e.Clock.Now().Add(-11 * time.Minute))
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "FakeHardwareReady", Status: corev1.ConditionFalse,
		Reason: "Broken", LastHeartbeatTime: since, LastTransitionTime: since})
	if err := e.Env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if len(annotate) > 0 {
		n.Annotations = annotate
		if err := e.Env.Client.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &corev1.Node{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "sick"}, got); err != nil {
			return false, err.Error()
		}
		for k := range annotate {
			if _, ok := got.Annotations[k]; !ok {
				return false, "annotation not cached yet"
			}
		}
		return len(got.Status.Conditions) == len(n.Status.Conditions), "condition not cached yet"
	})
	return e
}

// TestRepairReplacesFirst: an unhealthy node gets a replacement, and is deleted only once it is initialized, with
// its termination deadline the policy's drain bound from then; the metrics count the repair.
func TestRepairReplacesFirst(t *testing.T) {
	e := repairEnv(t, nil)
	ctx := context.Background()
	c := disruption.NewController(e.Deps)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	repl := replacementOf(t, e)
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, old); err != nil {
		t.Fatal(err)
	}
	r, ok, err := disruption.RecordOf(old)
	if err != nil || !ok || r.Reason != karpv1.DisruptionReasonUnhealthy || r.Condition != "FakeHardwareReady" || r.DrainBound != "2m0s" {
		t.Fatalf("record on the unhealthy nodeclaim = %+v (ok %v, err %v), want reason Unhealthy, condition FakeHardwareReady, drain bound 2m0s", r, ok, err)
	}
	if !old.DeletionTimestamp.IsZero() {
		t.Fatal("unhealthy nodeclaim deleted before its replacement initialized")
	}
	ready(t, e, repl)
	test.Eventually(t, wait, func() (bool, string) {
		got := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "sick"}, got)
		return err == nil && got.Annotations[disruption.CommandAnnotationKey] != "", "command not cached yet"
	})
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, old); err != nil {
		t.Fatal(err)
	}
	if old.DeletionTimestamp.IsZero() {
		t.Fatal("unhealthy nodeclaim not deleted after its replacement initialized")
	}
	want := termination.FormatDeadline(e.Clock.Now().Add(2 * time.Minute))
	if got := old.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Errorf("termination timestamp = %q, want %q (now plus the drain bound)", got, want)
	}
}

// TestRepairDoNotRepair: karpenter.sh/do-not-repair keeps repair off the node, with a DisruptionBlocked event.
func TestRepairDoNotRepair(t *testing.T) {
	e := repairEnv(t, map[string]string{karpv1.DoNotRepairAnnotationKey: "true"})
	ctx := context.Background()
	if err := disruption.NewController(e.Deps).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, old); err != nil {
		t.Fatal(err)
	}
	if _, ok := old.Annotations[disruption.CommandAnnotationKey]; ok || !old.DeletionTimestamp.IsZero() {
		t.Fatalf("do-not-repair node disrupted: annotations %v", old.Annotations)
	}
	var blocked bool
	for len(e.Recorder.Events) > 0 {
		ev := <-e.Recorder.Events
		blocked = blocked || strings.Contains(ev, "DisruptionBlocked Repair is blocked through the \"karpenter.sh/do-not-repair\" annotation")
	}
	if !blocked {
		t.Error("no DisruptionBlocked event for the do-not-repair node")
	}
}

// TestRepairRebootCounted: a reboot repair hands the node to the reboot controller (Rebooting=True,
// RebootRequested, the drain bound annotated) without deleting it, and counts it as Karpenter v1.15 does: in
// karpenter_nodeclaims_disrupted_total (reason unhealthy), karpenter_pods_disruption_initiated_total (its pod) and
// karpenter_nodeclaims_unhealthy_disrupted_total (its condition).
func TestRepairRebootCounted(t *testing.T) {
	e := repairEnv(t, nil)
	ctx := context.Background()
	bound := 2 * time.Minute
	e.Cloud.SetRepairPolicies([]cloudprovider.RepairPolicy{{ConditionType: "FakeHardwareReady", ConditionStatus: corev1.ConditionFalse,
		TolerationDuration: 10 * time.Minute, TerminationGracePeriod: &bound, Action: cloudprovider.RepairReboot}})
	if err := disruption.NewController(e.Deps).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	nc := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, nc); err != nil {
		t.Fatal(err)
	}
	cond := nc.GetCondition(karpv1.ConditionTypeRebooting)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != karpv1.RebootReasonRequested || !nc.DeletionTimestamp.IsZero() ||
		nc.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey] != "2m0s" {
		t.Fatalf("nodeclaim after a reboot repair: Rebooting %+v, deleting %v, annotations %v", cond, !nc.DeletionTimestamp.IsZero(), nc.Annotations)
	}
	labels := []string{"unhealthy", "default", nc.Labels[karpv1.CapacityTypeLabelKey], "", "graceful"}
	if v := testutil.ToFloat64(e.Deps.Metrics.NodeClaimsDisrupted.WithLabelValues(labels...)); v != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total%v = %v, want 1", labels, v)
	}
	if v := testutil.ToFloat64(e.Deps.Metrics.PodsDisruptionInitiated.WithLabelValues(labels...)); v != 1 {
		t.Errorf("karpenter_pods_disruption_initiated_total%v = %v, want 1", labels, v)
	}
	if v := testutil.ToFloat64(e.Deps.Metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues("fake_hardware_ready", "default",
		nc.Labels[karpv1.CapacityTypeLabelKey], nc.Status.ImageID)); v != 1 {
		t.Errorf("karpenter_nodeclaims_unhealthy_disrupted_total = %v, want 1", v)
	}
}
