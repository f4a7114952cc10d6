package podevents

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/test"
)

func TestPodEvents(t *testing.T) {
	pending := test.Pod("p").Obj()
	bound := test.Pod("p").NodeName("n1").Phase(corev1.PodRunning).Obj()
	succeeded := test.Pod("p").NodeName("n1").Phase(corev1.PodSucceeded).Obj()
	failed := test.Pod("p").NodeName("n1").Phase(corev1.PodFailed).Obj()
	terminating := bound.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	relabelled := bound.DeepCopy()
	relabelled.Labels = map[string]string{"app": "web"}

	tests := []struct {
		name string
		got  string
		want string
	}{
		{"created bound", onCreate(bound, false), "n1"},
		{"created pending", onCreate(pending, false), ""},
		{"listed at start", onCreate(bound, true), ""},
		{"created terminal", onCreate(succeeded, false), ""},
		{"bound", onUpdate(pending, bound), "n1"},
		{"still pending", onUpdate(pending, pending), ""},
		{"succeeded", onUpdate(bound, succeeded), "n1"},
		{"failed", onUpdate(bound, failed), "n1"},
		{"terminal stays terminal", onUpdate(succeeded, failed), ""},
		{"started terminating", onUpdate(bound, terminating), "n1"},
		{"still terminating", onUpdate(terminating, terminating), ""},
		{"label change", onUpdate(bound, relabelled), ""},
		{"bound pod deleted", onDelete(bound), "n1"},
		{"terminal pod deleted", onDelete(succeeded), ""},
		{"pending pod deleted", onDelete(pending), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: node %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
