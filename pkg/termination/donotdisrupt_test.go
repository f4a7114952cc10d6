package termination

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func TestPodDoNotDisrupt(t *testing.T) {
	now := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	start := metav1.NewTime(now.Add(-30 * time.Second))
	pod := func(v *string, started bool) *corev1.Pod {
		p := &corev1.Pod{}
		if v != nil {
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: *v}
		}
		if started {
			p.Status.StartTime = start.DeepCopy()
		}
		return p
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want DoNotDisrupt
	}{
		{"no annotation", pod(nil, true), DoNotDisrupt{}},
		{"true", pod(s("true"), true), DoNotDisrupt{Set: true, Value: "true", Active: true}},
		{"1m from the start, 30s in", pod(s("1m"), true), DoNotDisrupt{Set: true, Value: "1m", Active: true, For: time.Minute, Until: now.Add(30 * time.Second)}},
		{"20s from the start, 30s in", pod(s("20s"), true), DoNotDisrupt{Set: true, Value: "20s", For: 20 * time.Second, Until: now.Add(-10 * time.Second)}},
		{"duration, not started", pod(s("1m"), false), DoNotDisrupt{Set: true, Value: "1m", Active: true, For: time.Minute}},
		{"not a duration", pod(s("yes"), true), DoNotDisrupt{Set: true, Value: "yes", Invalid: `"yes" is neither "true" nor a duration such as 30m`}},
		{"zero", pod(s("0s"), true), DoNotDisrupt{Set: true, Value: "0s", Invalid: `duration "0s" is not positive`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodDoNotDisrupt(tc.pod, now)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("PodDoNotDisrupt (-want +got):\n%s", d)
			}
			if HasDoNotDisrupt(tc.pod, now) != tc.want.Active {
				t.Errorf("HasDoNotDisrupt disagrees with Active")
			}
		})
	}
}
