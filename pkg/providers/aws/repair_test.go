package aws

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/repair"
)

// TestRepairPoliciesGPUFaults: AcceleratedHardwareReady=False is told apart by the XID code in its reason, and only
// the faults a reboot clears reboot, only with RebootForRepair.
func TestRepairPoliciesGPUFaults(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if err := cloudprovider.ValidateRepairPolicies(RepairPolicies(true)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reason     string
		reboot     bool
		toleration time.Duration
		action     cloudprovider.RepairAction
	}{
		{"NvidiaXID46Error", true, 10 * time.Minute, cloudprovider.RepairReboot},
		{"NvidiaXID46Error", false, 10 * time.Minute, cloudprovider.RepairReplace},
		{"NvidiaXID158Error", true, 10 * time.Minute, cloudprovider.RepairReboot},
		{"NvidiaXID79Error", true, 10 * time.Minute, ""},
		{"NvidiaXID119Error", true, 10 * time.Minute, ""},
		{"NvidiaXID13Error", true, 30 * time.Minute, ""},
		{"DCGMHealthCode", true, 30 * time.Minute, ""},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: tc.reason,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		h := repair.CheckAt(n, RepairPolicies(tc.reboot), now, time.Time{})
		if !h.Unhealthy || h.Policy.TolerationDuration != tc.toleration || h.Policy.Action != tc.action {
			t.Errorf("%s (reboot %v): unhealthy %v, toleration %s, action %q; want %s, %q", tc.reason, tc.reboot, h.Unhealthy,
				h.Policy.TolerationDuration, h.Policy.Action, tc.toleration, tc.action)
		}
	}
}
