package scheduling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestNominationsOnOneNode(t *testing.T) {
	const zone = corev1.LabelTopologyZone
	app := map[string]string{"app": "web"}
	web := func(name string) *test.PodBuilder {
		return test.Pod(name).Label("app", "web").Spread(zone, 1, corev1.DoNotSchedule, app)
	}
	cases := []struct {
		name string
		pods []*corev1.Pod
		want []bool
	}{
		{
			name: "no spread: every pod",
			pods: []*corev1.Pod{test.Pod("a").Obj(), test.Pod("b").Obj(), test.Pod("c").Obj()},
			want: []bool{true, true, true},
		},
		{
			name: "zone spread maxSkew 1: one pod of the spread a node",
			pods: []*corev1.Pod{web("a").Obj(), web("b").Obj(), test.Pod("other").Obj(), web("c").Obj()},
			want: []bool{true, false, true, false},
		},
		{
			name: "maxSkew 2: two",
			pods: []*corev1.Pod{
				test.Pod("a").Label("app", "web").Spread(zone, 2, corev1.DoNotSchedule, app).Obj(),
				test.Pod("b").Label("app", "web").Spread(zone, 2, corev1.DoNotSchedule, app).Obj(),
				test.Pod("c").Label("app", "web").Spread(zone, 2, corev1.DoNotSchedule, app).Obj(),
			},
			want: []bool{true, true, false},
		},
		{
			name: "hostname spread: the plan keeps the node within maxSkew",
			pods: []*corev1.Pod{
				test.Pod("a").Label("app", "web").Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, app).Obj(),
				test.Pod("b").Label("app", "web").Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, app).Obj(),
			},
			want: []bool{true, true},
		},
		{
			name: "ScheduleAnyway is no filter",
			pods: []*corev1.Pod{
				test.Pod("a").Label("app", "web").Spread(zone, 1, corev1.ScheduleAnyway, app).Obj(),
				test.Pod("b").Label("app", "web").Spread(zone, 1, corev1.ScheduleAnyway, app).Obj(),
			},
			want: []bool{true, true},
		},
		{
			name: "a matching pod without the constraint, nominated first, counts for the spread's pods",
			pods: []*corev1.Pod{test.Pod("plain").Label("app", "web").Obj(), web("a").Obj()},
			want: []bool{true, false},
		},
		{
			name: "a matching pod without the constraint, after a spread pod, would be counted by it",
			pods: []*corev1.Pod{web("a").Obj(), test.Pod("plain").Label("app", "web").Obj(), test.Pod("x").Obj()},
			want: []bool{true, false, true},
		},
		{
			name: "other namespaces are not counted",
			pods: []*corev1.Pod{web("a").Obj(), web("b").Namespace("other").Obj()},
			want: []bool{true, true},
		},
		{
			name: "a pod of lower priority is not counted against one of higher",
			pods: []*corev1.Pod{web("low").Priority(-10).Obj(), web("high").Priority(100).Obj()},
			// high ignores low, but low would count high: only the first one.
			want: []bool{true, false},
		},
		{
			name: "different selectors do not interfere",
			pods: []*corev1.Pod{
				web("a").Obj(),
				test.Pod("b").Label("app", "api").Spread(zone, 1, corev1.DoNotSchedule, map[string]string{"app": "api"}).Obj(),
			},
			want: []bool{true, true},
		},
		{
			name: "matchLabelKeys narrows the selector to the pod's own value",
			pods: func() []*corev1.Pod {
				a := web("a").Label("rev", "1").Obj()
				b := web("b").Label("rev", "2").Obj()
				for _, p := range []*corev1.Pod{a, b} {
					p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"rev"}
				}
				return []*corev1.Pod{a, b}
			}(),
			want: []bool{true, true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, scheduling.NominationsOnOneNode(tc.pods)); diff != "" {
				t.Errorf("nominations (-want +got):\n%s", diff)
			}
		})
	}
}
