package repair

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

var policies = []cloudprovider.RepairPolicy{
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
	{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
	{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
}

// cond is a node condition of type t with status s since the given time.
type cond struct {
	t     string
	s     corev1.ConditionStatus
	since time.Time
}

func node(name, pool string, conds ...cond) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if pool != "" {
		n.Labels[karpv1.NodePoolLabelKey] = pool
	}
	for _, c := range conds {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(c.t), Status: c.s,
			LastTransitionTime: metav1.NewTime(c.since)})
	}
	return n
}

func ready(since time.Time) cond { return cond{"Ready", corev1.ConditionTrue, since} }

// pool returns n nodes of NodePool p, the first bad of them unhealthy (KernelReady=False since since).
func pool(p string, n, bad int, since time.Time) []*corev1.Node {
	var out []*corev1.Node
	for i := 0; i < n; i++ {
		c := []cond{ready(t0.Add(-time.Hour))}
		if i < bad {
			c = append(c, cond{"KernelReady", corev1.ConditionFalse, since})
		}
		out = append(out, node(fmt.Sprintf("%s-%d", p, i), p, c...))
	}
	return out
}

func TestAllowedUnhealthy(t *testing.T) {
	// 20%, rounded up.
	for total, want := range map[int]int{0: 0, 1: 1, 3: 1, 5: 1, 6: 2, 10: 2, 11: 3, 100: 20, 101: 21} {
		if got := AllowedUnhealthy(total); got != want {
			t.Errorf("AllowedUnhealthy(%d) = %d, want %d", total, got, want)
		}
	}
}

func TestDecide(t *testing.T) {
	type got struct {
		Verdict   Verdict
		Condition string
		RepairAt  time.Time
		Recheck   time.Time
		Group     Group
	}
	tests := []struct {
		name  string
		now   time.Time
		nodes []*corev1.Node
		node  string
		want  got
	}{
		{"healthy", t0, pool("a", 1, 0, t0), "a-0",
			got{Verdict: Healthy, Group: Group{NodePool: "a", Nodes: 1, Allowed: 1}}},
		{"a condition the policies do not watch", t0, []*corev1.Node{node("n", "a", cond{"DiskPressure", corev1.ConditionTrue, t0.Add(-time.Hour)})}, "n",
			got{Verdict: Healthy, Group: Group{NodePool: "a", Nodes: 1, Allowed: 1}}},
		{"watched condition with another status", t0, []*corev1.Node{node("n", "a", cond{"KernelReady", corev1.ConditionTrue, t0.Add(-time.Hour)})}, "n",
			got{Verdict: Healthy, Group: Group{NodePool: "a", Nodes: 1, Allowed: 1}}},
		{"within the toleration", t0.Add(29 * time.Minute), pool("a", 5, 1, t0), "a-0",
			got{Verdict: Tolerated, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute), Recheck: t0.Add(30 * time.Minute),
				Group: Group{NodePool: "a", Nodes: 5, Unhealthy: 1, Allowed: 1}}},
		{"at the end of the toleration", t0.Add(30 * time.Minute), pool("a", 5, 1, t0), "a-0",
			got{Verdict: Repair, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute),
				Group: Group{NodePool: "a", Nodes: 5, Unhealthy: 1, Allowed: 1}}},
		{"kubelet Ready Unknown", t0.Add(31 * time.Minute), []*corev1.Node{node("n", "a", cond{"Ready", corev1.ConditionUnknown, t0})}, "n",
			got{Verdict: Repair, Condition: "Ready", RepairAt: t0.Add(30 * time.Minute), Group: Group{NodePool: "a", Nodes: 1, Unhealthy: 1, Allowed: 1}}},
		{"the earliest repair time of two matching policies", t0.Add(15 * time.Minute),
			[]*corev1.Node{node("n", "a", cond{"Ready", corev1.ConditionFalse, t0.Add(-10 * time.Minute)}, cond{"AcceleratedHardwareReady", corev1.ConditionFalse, t0})}, "n",
			got{Verdict: Repair, Condition: "AcceleratedHardwareReady", RepairAt: t0.Add(10 * time.Minute), Group: Group{NodePool: "a", Nodes: 1, Unhealthy: 1, Allowed: 1}}},
		{"3 of 5 unhealthy: held back", t0.Add(time.Hour), pool("a", 5, 3, t0), "a-1",
			got{Verdict: HeldBack, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute), Recheck: t0.Add(time.Hour + HeldBackRecheck),
				Group: Group{NodePool: "a", Nodes: 5, Unhealthy: 3, Allowed: 1}}},
		{"2 of 5 unhealthy: held back, one still tolerated counts", t0.Add(time.Hour),
			append(pool("a", 4, 1, t0), node("a-late", "a", cond{"KernelReady", corev1.ConditionFalse, t0.Add(50 * time.Minute)})), "a-0",
			got{Verdict: HeldBack, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute), Recheck: t0.Add(time.Hour + HeldBackRecheck),
				Group: Group{NodePool: "a", Nodes: 5, Unhealthy: 2, Allowed: 1}}},
		{"2 of 6 unhealthy: within 20% rounded up", t0.Add(time.Hour), pool("a", 6, 2, t0), "a-0",
			got{Verdict: Repair, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute), Group: Group{NodePool: "a", Nodes: 6, Unhealthy: 2, Allowed: 2}}},
		{"another NodePool's unhealthy nodes do not count", t0.Add(time.Hour), append(pool("a", 5, 1, t0), pool("b", 2, 2, t0)...), "a-0",
			got{Verdict: Repair, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute), Group: Group{NodePool: "a", Nodes: 5, Unhealthy: 1, Allowed: 1}}},
		{"a node of no NodePool counts against the cluster", t0.Add(time.Hour),
			append(pool("a", 3, 2, t0), node("standalone", "", cond{"KernelReady", corev1.ConditionFalse, t0})), "standalone",
			got{Verdict: HeldBack, Condition: "KernelReady", RepairAt: t0.Add(30 * time.Minute), Recheck: t0.Add(time.Hour + HeldBackRecheck),
				Group: Group{Nodes: 4, Unhealthy: 3, Allowed: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := DecideNode(Input{Now: tt.now, Policies: policies, Nodes: tt.nodes}, tt.node)
			if !ok {
				t.Fatalf("no decision for %s", tt.node)
			}
			g := got{Verdict: d.Verdict, Condition: string(d.Health.Condition.Type), RepairAt: d.Health.RepairAt, Recheck: d.Recheck, Group: d.Group}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecisionMessage(t *testing.T) {
	in := Input{Now: t0.Add(time.Hour), Policies: policies, Nodes: pool("a", 5, 3, t0)}
	d, _ := DecideNode(in, "a-0")
	want := "unhealthy (KernelReady=False since 2026-11-25T12:00:00Z) past its 30m0s toleration since 2026-11-25T12:30:00Z, but repair holds back: 3 of 5 nodes in NodePool a are unhealthy, more than the 20% limit (1)"
	if d.Message() != want {
		t.Errorf("message\n got %q\nwant %q", d.Message(), want)
	}
	in.Now = t0.Add(10 * time.Minute)
	in.Nodes = pool("a", 5, 1, t0)
	d, _ = DecideNode(in, "a-0")
	if want := "unhealthy (KernelReady=False since 2026-11-25T12:00:00Z); would be repaired at 2026-11-25T12:30:00Z, after the 30m0s toleration"; d.Message() != want {
		t.Errorf("message\n got %q\nwant %q", d.Message(), want)
	}
}

func TestWithTolerations(t *testing.T) {
	got, err := WithTolerations(policies, map[string]time.Duration{"Ready": time.Minute, "KernelReady": 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var tol []time.Duration
	for _, p := range got {
		tol = append(tol, p.TolerationDuration)
	}
	if diff := cmp.Diff([]time.Duration{time.Minute, time.Minute, 10 * time.Minute, 5 * time.Second}, tol); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if policies[0].TolerationDuration != 30*time.Minute {
		t.Errorf("WithTolerations changed its input")
	}
	_, err = WithTolerations(policies, map[string]time.Duration{"KernelOK": time.Second})
	if want := "no repair policy of the cloud provider watches condition KernelOK (policies watch: Ready, AcceleratedHardwareReady, KernelReady)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
