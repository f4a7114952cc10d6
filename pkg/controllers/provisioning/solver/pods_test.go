package solver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/test"
)

func TestIsProvisionable(t *testing.T) {
	deleting := test.Pod("deleting").Unschedulable().Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	scheduledFalseOtherReason := test.Pod("gated").Obj()
	scheduledFalseOtherReason.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"unschedulable", test.Pod("a").Unschedulable().Obj(), true},
		{"replicaset owned", test.Pod("a").Unschedulable().OwnedBy("apps/v1", "ReplicaSet", "rs").Obj(), true},
		{"not yet seen by the scheduler", test.Pod("a").Obj(), false},
		{"scheduling gated", scheduledFalseOtherReason, false},
		{"bound", test.Pod("a").Unschedulable().NodeName("n").Obj(), false},
		{"daemonset", test.Pod("a").Unschedulable().OwnedBy("apps/v1", "DaemonSet", "ds").Obj(), false},
		{"succeeded", test.Pod("a").Unschedulable().Phase(corev1.PodSucceeded).Obj(), false},
		{"failed", test.Pod("a").Unschedulable().Phase(corev1.PodFailed).Obj(), false},
		{"being deleted", deleting, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsProvisionable(tt.pod); got != tt.want {
				t.Errorf("IsProvisionable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAwaitingScheduler(t *testing.T) {
	gated := test.Pod("gated").Obj()
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	gatedCondition := test.Pod("gated").Obj()
	gatedCondition.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
	otherScheduler := test.Pod("other").Obj()
	otherScheduler.Spec.SchedulerName = "my-scheduler"
	defaultScheduler := test.Pod("default").Obj()
	defaultScheduler.Spec.SchedulerName = corev1.DefaultSchedulerName
	deleting := test.Pod("deleting").Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"not yet seen by the scheduler", test.Pod("a").Obj(), true},
		{"default scheduler named", defaultScheduler, true},
		{"unschedulable: provisionable instead", test.Pod("a").Unschedulable().Obj(), false},
		{"bound", test.Pod("a").NodeName("n").Obj(), false},
		{"scheduling gates", gated, false},
		{"scheduling gated condition", gatedCondition, false},
		{"another scheduler's", otherScheduler, false},
		{"daemonset", test.Pod("a").OwnedBy("apps/v1", "DaemonSet", "ds").Obj(), false},
		{"succeeded", test.Pod("a").Phase(corev1.PodSucceeded).Obj(), false},
		{"being deleted", deleting, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AwaitingScheduler(tt.pod); got != tt.want {
				t.Errorf("AwaitingScheduler = %v, want %v", got, tt.want)
			}
		})
	}
}
