package disruption

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
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

// TestNodeChangedAgreesWithRestKey: the change watch counts a Node update exactly when the Node's part of the rest
// key changes (decisionFieldsEqual and writeNode read the same fields).
func TestNodeChangedAgreesWithRestKey(t *testing.T) {
	base := func() *corev1.Node {
		n := test.Node("n1", "fake:///n1").Ready(true).Label("zone", "a").Obj()
		n.Annotations = map[string]string{"a": "1"}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		return n
	}
	key := func(n *corev1.Node) uint64 {
		h := newFNV()
		writeNode(&h, n)
		return uint64(h)
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Node)
	}{
		{"nothing", func(*corev1.Node) {}},
		{"heartbeat", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))
		}},
		{"label value", func(n *corev1.Node) { n.Labels["zone"] = "b" }},
		{"label added", func(n *corev1.Node) { n.Labels["team"] = "x" }},
		{"annotation", func(n *corev1.Node) { n.Annotations["a"] = "2" }},
		{"annotations emptied", func(n *corev1.Node) { n.Annotations = nil }},
		{"taint", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }},
		{"provider id", func(n *corev1.Node) { n.Spec.ProviderID = "fake:///n2" }},
		{"uid", func(n *corev1.Node) { n.UID = "u2" }},
		{"allocatable value", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("3") }},
		{"allocatable written otherwise, same value", func(n *corev1.Node) {
			n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("4000m")
		}},
		{"allocatable in another format", func(n *corev1.Node) {
			n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("1073741824")
		}},
		{"allocatable resource added", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110") }},
		{"condition status", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }},
		{"condition added", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "DiskPressure", Status: corev1.ConditionFalse})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if got, want := nodeChanged(old, cur), key(old) != key(cur); got != want {
				t.Errorf("nodeChanged = %v, rest key changed = %v", got, want)
			}
		})
	}
}

func BenchmarkNodeChanged(b *testing.B) {
	old := test.Node("n1", "fake:///n1").Ready(true).Obj()
	for i := range 30 {
		old.Labels[fmt.Sprintf("example.com/label-%02d", i)] = "value"
	}
	cur := old.DeepCopy()
	cur.ResourceVersion = "2"
	b.ReportAllocs()
	for b.Loop() {
		if nodeChanged(old, cur) {
			b.Fatal("a heartbeat counted as a change")
		}
	}
}

func TestInputsKey(t *testing.T) {
	base := func() *core.Snapshot {
		ds1 := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cni", ResourceVersion: "5"}}
		ds2 := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "csi", ResourceVersion: "6"}}
		return &core.Snapshot{
			Candidates: []*core.Candidate{{NodeClaim: "c1", Price: 0.1}},
			Cluster: &scheduling.Snapshot{
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": fake.DefaultInstanceTypes()},
				DaemonSets:    []*appsv1.DaemonSet{ds1, ds2},
			},
		}
	}
	want := inputsKey(base())
	for _, tc := range []struct {
		name   string
		change func(s *core.Snapshot)
		same   bool
	}{
		{name: "nothing", same: true, change: func(*core.Snapshot) {}},
		{name: "DaemonSets listed in another order", same: true, change: func(s *core.Snapshot) {
			s.Cluster.DaemonSets[0], s.Cluster.DaemonSets[1] = s.Cluster.DaemonSets[1], s.Cluster.DaemonSets[0]
		}},
		{name: "instance types listed in another order", same: true, change: func(s *core.Snapshot) {
			its := s.Cluster.InstanceTypes["default"]
			its[0], its[1] = its[1], its[0]
		}},
		{name: "a DaemonSet changed", change: func(s *core.Snapshot) { s.Cluster.DaemonSets[1].ResourceVersion = "7" }},
		{name: "a DaemonSet added", change: func(s *core.Snapshot) {
			s.Cluster.DaemonSets = append(s.Cluster.DaemonSets, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
		}},
		{name: "an offering ran out", change: func(s *core.Snapshot) {
			s.Cluster.InstanceTypes["default"][2].Offerings[0].Available = false
		}},
		{name: "a price changed", change: func(s *core.Snapshot) { s.Cluster.InstanceTypes["default"][0].Offerings[0].Price *= 2 }},
		{name: "an instance type gone", change: func(s *core.Snapshot) {
			s.Cluster.InstanceTypes["default"] = s.Cluster.InstanceTypes["default"][1:]
		}},
		{name: "a candidate's price changed", change: func(s *core.Snapshot) { s.Candidates[0].Price = 0.2 }},
		{name: "a volume appeared", change: func(s *core.Snapshot) {
			s.Cluster.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "data"}}}
		}},
	} {
		s := base()
		tc.change(s)
		if got := inputsKey(s) == want; got != tc.same {
			t.Errorf("%s: same key %v, want %v", tc.name, got, tc.same)
		}
	}
}
