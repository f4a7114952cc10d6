package repair

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// gpuPolicies split AcceleratedHardwareReady=False by reason, as the AWS provider does with RebootForRepair on.
var gpuPolicies = []cloudprovider.RepairPolicy{
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, Reason: `XID(46|48)`, TolerationDuration: 10 * time.Minute,
		Action: cloudprovider.RepairReboot},
	{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, Reason: `XID(79)`, TolerationDuration: 10 * time.Minute},
	{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
}

func gpuNode(reason string, since time.Time, extra ...corev1.NodeCondition) *corev1.Node {
	n := node("gpu-0", "gpu", ready(t0.Add(-time.Hour)))
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse,
		Reason: reason, LastTransitionTime: metav1.NewTime(since)})
	n.Status.Conditions = append(n.Status.Conditions, extra...)
	return n
}

func TestRebootDecisions(t *testing.T) {
	since := t0.Add(-15 * time.Minute)
	notReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(-40 * time.Minute))}
	type want struct {
		Verdict   Verdict
		Action    cloudprovider.RepairAction
		Escalated bool
		RepairAt  time.Time
		Reason    string
	}
	for _, tc := range []struct {
		name          string
		node          *corev1.Node
		rebootEnded   time.Time
		recentReboots int
		want          want
	}{
		{"a fault a reboot clears: reboot", gpuNode("NvidiaXID46Error", since), time.Time{}, 0,
			want{Repair, cloudprovider.RepairReboot, false, since.Add(10 * time.Minute), `XID(46|48)`}},
		{"a fatal fault: replace", gpuNode("NvidiaXID79Error", since), time.Time{}, 0,
			want{Repair, "", false, since.Add(10 * time.Minute), `XID(79)`}},
		{"an unknown fault: the fallback's 30 minutes", gpuNode("NvidiaXID13Error", since), time.Time{}, 0,
			want{Tolerated, "", false, since.Add(30 * time.Minute), ""}},
		{"a reboot that did not clear the fault: the toleration counts again from its end", gpuNode("NvidiaXID46Error", since),
			t0.Add(-5 * time.Minute), 1, want{Tolerated, "", false, t0.Add(5 * time.Minute), `XID(46|48)`}},
		{"past the toleration after one reboot: reboot again", gpuNode("NvidiaXID46Error", since), t0.Add(-11 * time.Minute), 1,
			want{Repair, cloudprovider.RepairReboot, false, t0.Add(-time.Minute), `XID(46|48)`}},
		{"two reboots within the window: replace instead", gpuNode("NvidiaXID46Error", since), t0.Add(-11 * time.Minute), 2,
			want{Repair, cloudprovider.RepairReplace, true, t0.Add(-time.Minute), `XID(46|48)`}},
		{"a replacement due too: it wins over the reboot", gpuNode("NvidiaXID48Error", since, notReady), time.Time{}, 0,
			want{Repair, "", false, t0.Add(-10 * time.Minute), ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node
			if len(n.Status.Conditions) > 2 {
				n.Status.Conditions = n.Status.Conditions[1:] // the NotReady condition replaces Ready
			}
			in := Input{Now: t0, Policies: gpuPolicies, Nodes: []*corev1.Node{n},
				RebootEnded: map[string]time.Time{}, RecentReboots: map[string]int{n.Name: tc.recentReboots}}
			if !tc.rebootEnded.IsZero() {
				in.RebootEnded[n.Name] = tc.rebootEnded
			}
			d, _ := DecideNode(in, n.Name)
			got := want{d.Verdict, d.Action, d.Escalated, d.Health.RepairAt, d.Health.Policy.Reason}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s\n%s", diff, d.Message())
			}
			if d.Reboots() != (tc.want.Verdict == Repair && tc.want.Action == cloudprovider.RepairReboot) {
				t.Errorf("Reboots() = %v", d.Reboots())
			}
		})
	}
}

func TestRebootMessage(t *testing.T) {
	n := gpuNode("NvidiaXID46Error", t0.Add(-15*time.Minute))
	d, _ := DecideNode(Input{Now: t0, Policies: gpuPolicies, Nodes: []*corev1.Node{n}}, n.Name)
	want := "unhealthy (AcceleratedHardwareReady=False, reason NvidiaXID46Error, since 2026-11-25T11:45:00Z) past its 10m0s toleration since 2026-11-25T11:55:00Z: rebooted in place"
	if got := d.Message(); got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}

func TestValidateRepairPolicies(t *testing.T) {
	if err := cloudprovider.ValidateRepairPolicies(gpuPolicies); err != nil {
		t.Errorf("valid policies: %v", err)
	}
	bad := []cloudprovider.RepairPolicy{{ConditionType: "X", ConditionStatus: corev1.ConditionFalse, Reason: "("}}
	if err := cloudprovider.ValidateRepairPolicies(bad); err == nil {
		t.Error("a pattern that does not compile passed")
	}
	bad = []cloudprovider.RepairPolicy{{ConditionType: "X", ConditionStatus: corev1.ConditionFalse, Action: "Reimage"}}
	if err := cloudprovider.ValidateRepairPolicies(bad); err == nil {
		t.Error("an unknown action passed")
	}
}
