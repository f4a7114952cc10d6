package termination_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

type deletion struct {
	Pod   string
	Grace int64
}

func deletions(ds []termination.Deletion) []deletion {
	var out []deletion
	for _, d := range ds {
		out = append(out, deletion{Pod: d.Pod.Namespace + "/" + d.Pod.Name, Grace: d.GracePeriodSeconds})
	}
	return out
}

func TestClassify(t *testing.T) {
	tolerateAll := corev1.Toleration{Operator: corev1.TolerationOpExists}
	tolerateDisrupted := corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tolerateOther := corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want termination.Class
	}{
		{"ordinary", test.DrainPod("a").ReplicaSet("rs").Obj(), termination.ClassOrdinary},
		{"bare pod is ordinary", test.DrainPod("a").Obj(), termination.ClassOrdinary},
		{"cluster critical", test.DrainPod("a").PriorityClass("system-cluster-critical").Obj(), termination.ClassCritical},
		{"node critical", test.DrainPod("a").PriorityClass("system-node-critical").Obj(), termination.ClassCritical},
		{"other priority class is ordinary", test.DrainPod("a").PriorityClass("high").Obj(), termination.ClassOrdinary},
		{"daemonset", test.DrainPod("a").DaemonSet("cni").Obj(), termination.ClassDaemonSet},
		{"daemonset tolerating nothing is still never evicted", test.DrainPod("a").DaemonSet("csi").Obj(), termination.ClassDaemonSet},
		{"critical daemonset", test.DrainPod("a").DaemonSet("cni").PriorityClass("system-node-critical").Obj(), termination.ClassDaemonSet},
		{"static", test.DrainPod("a").Static().Obj(), termination.ClassStatic},
		{"static critical", test.DrainPod("a").Static().PriorityClass("system-node-critical").Obj(), termination.ClassStatic},
		{"succeeded", test.DrainPod("a").Phase(corev1.PodSucceeded).Obj(), termination.ClassTerminal},
		{"failed daemonset", test.DrainPod("a").DaemonSet("x").Phase(corev1.PodFailed).Obj(), termination.ClassTerminal},
		{"tolerates everything", test.DrainPod("a").Toleration(tolerateAll).Obj(), termination.ClassToleratesDisrupted},
		{"tolerates the disrupted taint", test.DrainPod("a").Toleration(tolerateDisrupted).Obj(), termination.ClassToleratesDisrupted},
		{"tolerates another taint", test.DrainPod("a").Toleration(tolerateOther).Obj(), termination.ClassOrdinary},
		{"terminating within grace", test.DrainPod("a").Terminating(t0.Add(-59 * time.Second)).Obj(), termination.ClassOrdinary},
		{"stuck terminating", test.DrainPod("a").Terminating(t0.Add(-61 * time.Second)).Obj(), termination.ClassStuckTerminating},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := termination.Classify(tc.pod, t0); got != tc.want {
				t.Errorf("Classify() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlanDrain(t *testing.T) {
	cases := []struct {
		name          string
		pods          []*corev1.Pod
		deadline      *time.Time
		wantEvict     []string
		wantDelete    []deletion
		wantDND       []string
		wantRemaining []string
		wantNext      *time.Time
	}{
		{
			name:      "empty node is drained",
			pods:      nil,
			wantEvict: nil,
		},
		{
			name: "only node agents, static and finished pods: drained, nothing evicted",
			pods: []*corev1.Pod{
				test.DrainPod("cni").Namespace("kube-system").DaemonSet("aws-node").PriorityClass("system-node-critical").Obj(),
				test.DrainPod("csi").Namespace("kube-system").DaemonSet("ebs-csi-node").Obj(),
				test.DrainPod("etcd").Namespace("kube-system").Static().Obj(),
				test.DrainPod("job").Phase(corev1.PodSucceeded).Obj(),
			},
		},
		{
			name: "ordinary pods first, critical pods wait",
			pods: []*corev1.Pod{
				test.DrainPod("dns").Namespace("kube-system").PriorityClass("system-cluster-critical").Obj(),
				test.DrainPod("b").Obj(),
				test.DrainPod("a").Obj(),
				test.DrainPod("cni").Namespace("kube-system").DaemonSet("aws-node").Obj(),
			},
			wantEvict:     []string{"default/a", "default/b"},
			wantRemaining: []string{"default/a", "default/b", "kube-system/dns"},
		},
		{
			name: "critical pods wait while an ordinary pod is still terminating",
			pods: []*corev1.Pod{
				test.DrainPod("dns").Namespace("kube-system").PriorityClass("system-cluster-critical").Obj(),
				test.DrainPod("a").Terminating(t0.Add(10 * time.Second)).Obj(),
			},
			wantRemaining: []string{"default/a", "kube-system/dns"},
		},
		{
			name: "critical pods evicted once the ordinary ones are gone",
			pods: []*corev1.Pod{
				test.DrainPod("dns").Namespace("kube-system").PriorityClass("system-cluster-critical").Obj(),
				test.DrainPod("proxy").Namespace("kube-system").DaemonSet("kube-proxy").PriorityClass("system-node-critical").Obj(),
			},
			wantEvict:     []string{"kube-system/dns"},
			wantRemaining: []string{"kube-system/dns"},
		},
		{
			name: "stuck terminating pod no longer holds the drain",
			pods: []*corev1.Pod{
				test.DrainPod("a").Terminating(t0.Add(-2 * time.Minute)).Obj(),
				test.DrainPod("dns").Namespace("kube-system").PriorityClass("system-cluster-critical").Obj(),
			},
			wantEvict:     []string{"kube-system/dns"},
			wantRemaining: []string{"kube-system/dns"},
		},
		{
			name: "do-not-disrupt without a deadline is never evicted and holds the critical wave",
			pods: []*corev1.Pod{
				test.DrainPod("keep").DoNotDisrupt().Obj(),
				test.DrainPod("a").Obj(),
				test.DrainPod("dns").Namespace("kube-system").PriorityClass("system-cluster-critical").Obj(),
			},
			wantEvict:     []string{"default/a"},
			wantDND:       []string{"default/keep"},
			wantRemaining: []string{"default/a", "default/keep", "kube-system/dns"},
		},
		{
			name: "do-not-disrupt before the deadline waits until deadline minus its grace",
			pods: []*corev1.Pod{
				test.DrainPod("keep").DoNotDisrupt().Grace(30).Obj(),
			},
			deadline:      at(10 * time.Minute),
			wantDND:       []string{"default/keep"},
			wantRemaining: []string{"default/keep"},
			wantNext:      at(9*time.Minute + 30*time.Second),
		},
		{
			name: "do-not-disrupt deleted with its full grace at deadline minus grace",
			pods: []*corev1.Pod{
				test.DrainPod("keep").DoNotDisrupt().Grace(30).Obj(),
			},
			deadline:      at(30 * time.Second),
			wantDelete:    []deletion{{"default/keep", 30}},
			wantRemaining: []string{"default/keep"},
		},
		{
			name: "pod with a long grace is deleted early with the time that is left",
			pods: []*corev1.Pod{
				test.DrainPod("slow").Grace(600).Obj(),
				test.DrainPod("fast").Grace(5).Obj(),
			},
			deadline:      at(100*time.Second + 500*time.Millisecond),
			wantDelete:    []deletion{{"default/slow", 100}},
			wantEvict:     []string{"default/fast"},
			wantRemaining: []string{"default/fast", "default/slow"},
			wantNext:      at(95*time.Second + 500*time.Millisecond),
		},
		{
			name: "unset grace defaults to 30s",
			pods: []*corev1.Pod{
				test.DrainPod("a").Grace(-1).Obj(),
			},
			deadline:      at(20 * time.Second),
			wantDelete:    []deletion{{"default/a", 20}},
			wantRemaining: []string{"default/a"},
		},
		{
			name: "past the deadline every remaining pod is deleted at once, critical ones too",
			pods: []*corev1.Pod{
				test.DrainPod("a").Grace(30).Obj(),
				test.DrainPod("keep").DoNotDisrupt().Grace(30).Obj(),
				test.DrainPod("dns").Namespace("kube-system").PriorityClass("system-cluster-critical").Grace(30).Obj(),
				test.DrainPod("cni").Namespace("kube-system").DaemonSet("aws-node").Grace(30).Obj(),
			},
			deadline:      at(-time.Second),
			wantDelete:    []deletion{{"default/a", 0}, {"default/keep", 0}, {"kube-system/dns", 0}},
			wantRemaining: []string{"default/a", "default/keep", "kube-system/dns"},
		},
		{
			name: "terminating pod whose grace outlasts the deadline is deleted again with less",
			pods: []*corev1.Pod{
				test.DrainPod("a").Grace(300).Terminating(t0.Add(250 * time.Second)).Obj(),
			},
			deadline:      at(40 * time.Second),
			wantDelete:    []deletion{{"default/a", 40}},
			wantRemaining: []string{"default/a"},
		},
		{
			name: "terminating pod already due by the deadline is left alone",
			pods: []*corev1.Pod{
				test.DrainPod("a").Grace(30).Terminating(t0.Add(20 * time.Second)).Obj(),
			},
			deadline:      at(20 * time.Second),
			wantRemaining: []string{"default/a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := termination.PlanDrain(termination.DrainInput{Now: t0, Pods: tc.pods, Deadline: tc.deadline})
			if diff := cmp.Diff(tc.wantEvict, names(plan.Evict)); diff != "" {
				t.Errorf("Evict (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelete, deletions(plan.Delete)); diff != "" {
				t.Errorf("Delete (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDND, names(plan.DoNotDisrupt)); diff != "" {
				t.Errorf("DoNotDisrupt (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemaining, names(plan.Remaining)); diff != "" {
				t.Errorf("Remaining (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNext, plan.NextForcedDeletion); diff != "" {
				t.Errorf("NextForcedDeletion (-want +got):\n%s", diff)
			}
			if got, want := plan.Drained(), len(tc.wantRemaining) == 0; got != want {
				t.Errorf("Drained() = %v, want %v", got, want)
			}
		})
	}
}

func TestPlanDrainDeterministic(t *testing.T) {
	pods := []*corev1.Pod{test.DrainPod("c").Obj(), test.DrainPod("a").Obj(), test.DrainPod("b").Namespace("x").Obj()}
	reversed := []*corev1.Pod{pods[2], pods[1], pods[0]}
	a := termination.PlanDrain(termination.DrainInput{Now: t0, Pods: pods})
	b := termination.PlanDrain(termination.DrainInput{Now: t0, Pods: reversed})
	if diff := cmp.Diff(names(a.Evict), names(b.Evict)); diff != "" {
		t.Errorf("order of input changed the plan (-first +second):\n%s", diff)
	}
}
