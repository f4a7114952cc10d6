package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestRestKey(t *testing.T) {
	base := func() *View {
		n := test.Node("n1", "fake:///n1").Ready(true).Label("zone", "a").Obj()
		n.ResourceVersion = "10"
		nc := test.NodeClaim("c1", "default").Obj()
		nc.ResourceVersion = "11"
		p1, p2 := test.Pod("p1").Obj(), test.Pod("p2").Obj()
		p1.ResourceVersion, p2.ResourceVersion = "12", "13"
		return &View{Claims: []karpv1.NodeClaim{*nc}, Nodes: map[string]*corev1.Node{"n1": n}, Pods: []*corev1.Pod{p1, p2},
			AllNodePools: []*karpv1.NodePool{test.NodePool("default").Obj()}}
	}
	want := restKey(base(), 1)
	for _, tc := range []struct {
		name    string
		change  func(v *View)
		buffers bool
		same    bool
	}{
		{name: "buffer room changed", buffers: true, change: func(*View) {}},
		{name: "pods listed in another order", same: true, change: func(v *View) { v.Pods[0], v.Pods[1] = v.Pods[1], v.Pods[0] }},
		{name: "node heartbeat", same: true, change: func(v *View) {
			v.Nodes["n1"].ResourceVersion = "20"
			v.Nodes["n1"].Status.Conditions[0].LastHeartbeatTime = metav1.Now()
		}},
		{name: "pod changed", change: func(v *View) { v.Pods[1].ResourceVersion = "21" }},
		{name: "pod gone", change: func(v *View) { v.Pods = v.Pods[:1] }},
		{name: "nodeclaim changed", change: func(v *View) { v.Claims[0].ResourceVersion = "22" }},
		{name: "node label", change: func(v *View) { v.Nodes["n1"].Labels["zone"] = "b" }},
		{name: "node taint", change: func(v *View) {
			v.Nodes["n1"].Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "node not ready", change: func(v *View) { v.Nodes["n1"].Status.Conditions[0].Status = corev1.ConditionFalse }},
		{name: "nodepool changed", change: func(v *View) { v.AllNodePools[0].ResourceVersion = "23" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := base()
			tc.change(v)
			buffers := uint64(1)
			if tc.buffers {
				buffers = 2
			}
			if got := restKey(v, buffers); (got == want) != tc.same {
				t.Errorf("key unchanged = %v, want %v", got == want, tc.same)
			}
		})
	}
}

func TestRestUntil(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)
	schedule := "0 9 * * *"
	pod := func(value string, started time.Time) *corev1.Pod {
		p := test.Pod("p").Obj()
		p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: value}
		p.Status.StartTime = &metav1.Time{Time: started}
		return p
	}
	for _, tc := range []struct {
		name      string
		snap      *core.Snapshot
		repairDue time.Time
		want      time.Time
	}{
		{name: "nothing time-bound", snap: &core.Snapshot{}, want: now.Add(RestRecheck)},
		{name: "scheduled budget: the next minute", want: now.Truncate(time.Minute).Add(time.Minute), snap: &core.Snapshot{
			NodePools: map[string]*karpv1.NodePool{"default": test.NodePool("default").ScheduledBudget("0", schedule, time.Hour).Obj()}}},
		{name: "fresh replacement", want: now.Add(time.Minute), snap: &core.Snapshot{Candidates: []*core.Candidate{
			{Replacement: true, CreatedAt: now.Add(time.Minute - core.FreshReplacementAge)}}}},
		{name: "do-not-disrupt duration", want: now.Add(90 * time.Second), snap: &core.Snapshot{Candidates: []*core.Candidate{
			{Pods: []*corev1.Pod{pod("2m", now.Add(-30*time.Second)), pod("true", now)}}}}},
		{name: "do-not-disrupt ended", want: now.Add(RestRecheck), snap: &core.Snapshot{Candidates: []*core.Candidate{
			{Pods: []*corev1.Pod{pod("1m", now.Add(-2*time.Minute))}}}}},
		{name: "repair toleration", snap: &core.Snapshot{}, repairDue: now.Add(3 * time.Minute), want: now.Add(3 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := restUntil(now, tc.snap, tc.repairDue); !got.Equal(tc.want) {
				t.Errorf("restUntil = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAtRest(t *testing.T) {
	drifted := &core.Candidate{NodeClaim: "drifted", Drifted: karpv1.ReasonNodePoolDrifted}
	idle := &core.Candidate{NodeClaim: "idle"}
	stay := func(nc string, r core.StayReason) core.Stay { return core.Stay{NodeClaim: nc, Reason: r} }
	for _, tc := range []struct {
		name       string
		candidates []*core.Candidate
		stays      []core.Stay
		want       bool
	}{
		{name: "nothing", want: true},
		{name: "consolidation finds no cheaper node", candidates: []*core.Candidate{idle},
			stays: []core.Stay{stay("idle", core.StayNoCheaper)}, want: true},
		{name: "consolidation: pods fit nowhere else", candidates: []*core.Candidate{idle},
			stays: []core.Stay{stay("idle", core.StayPodsDoNotFit)}, want: true},
		{name: "drifted, held by do-not-disrupt", candidates: []*core.Candidate{drifted},
			stays: []core.Stay{stay("drifted", core.StayDoNotDisrupt)}, want: true},
		{name: "drifted, held by its budget", candidates: []*core.Candidate{drifted},
			stays: []core.Stay{stay("drifted", core.StayBudget)}, want: true},
		{name: "drifted, no replacement fits", candidates: []*core.Candidate{drifted, idle},
			stays: []core.Stay{stay("idle", core.StayNoCheaper), stay("drifted", core.StayPodsDoNotFit)}, want: false},
		{name: "not examined", candidates: []*core.Candidate{idle},
			stays: []core.Stay{stay("idle", core.StayNotExamined)}, want: false},
		{name: "repair", candidates: []*core.Candidate{{NodeClaim: "sick", Repair: &core.Repair{}}}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := atRest(&core.Result{Stays: tc.stays}, &core.Snapshot{Candidates: tc.candidates}); got != tc.want {
				t.Errorf("atRest = %v, want %v", got, tc.want)
			}
		})
	}
}
