package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

func bound(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

// TestValidateDrain: the pods of the nodes to drain must fit on the registered nodes left, as they are filled
// now, without new capacity, and without taking the room of pending pods that fit today.
func TestValidateDrain(t *testing.T) {
	old1, old2 := pod("a", "3"), pod("b", "3")
	daemon := pod("ds", "3")
	daemon.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
	pool := test.SchedNodePool("default").Obj()
	cases := []struct {
		name    string
		nodes   []*scheduling.StateNode
		drain   []string
		moving  []*corev1.Pod
		pending []*corev1.Pod
		want    string // substring of the answer; "" when the drain may go
	}{{
		name:   "room on the replacement",
		nodes:  []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("repl", "8", "32Gi").Obj()},
		drain:  []string{"old"},
		moving: []*corev1.Pod{bound(old1, "old"), bound(old2, "old")},
	}, {
		name: "the kube-scheduler filled the replacement with other pods",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(),
			test.SchedNode("repl", "8", "32Gi").Pods(pod("other", "4")).Obj()},
		drain:  []string{"old"},
		moving: []*corev1.Pod{bound(old1, "old"), bound(old2, "old")},
		want:   "would not fit on the nodes there are now (1 of 2 pods to move would wait)",
	}, {
		name: "a replacement not registered yet takes no pod",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(),
			test.SchedNode("repl", "8", "32Gi").InFlight("default").Obj()},
		drain:  []string{"old"},
		moving: []*corev1.Pod{bound(old1, "old")},
		want:   "pod default/a would not fit",
	}, {
		name: "a node being deleted takes no pod",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(),
			func() *scheduling.StateNode {
				n := test.SchedNode("going", "8", "32Gi").Obj()
				n.MarkedForDeletion = true
				return n
			}()},
		drain:  []string{"old"},
		moving: []*corev1.Pod{bound(old1, "old")},
		want:   "would not fit",
	}, {
		name:   "a tainted node takes no pod",
		nodes:  []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("t", "8", "32Gi").Taint("karpenter.sh/disrupted", "", corev1.TaintEffectNoSchedule).Obj()},
		drain:  []string{"old"},
		moving: []*corev1.Pod{bound(old1, "old")},
		want:   "would not fit",
	}, {
		name:   "DaemonSet pods do not move",
		nodes:  []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj()},
		drain:  []string{"old"},
		moving: []*corev1.Pod{bound(daemon, "old")},
	}, {
		name:    "moving would take the room of a pending pod",
		nodes:   []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("repl", "4", "16Gi").Obj()},
		drain:   []string{"old"},
		moving:  []*corev1.Pod{bound(old1, "old")},
		pending: []*corev1.Pod{pod("waiting", "3")},
		want:    "1 more pending pods without a node",
	}, {
		name:    "a pending pod that fits nowhere today does not block",
		nodes:   []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("repl", "4", "16Gi").Obj()},
		drain:   []string{"old"},
		moving:  []*corev1.Pod{bound(old1, "old")},
		pending: []*corev1.Pod{pod("huge", "64")},
	}, {
		name: "two drains together need more room than there is",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("old2", "8", "32Gi").Obj(),
			test.SchedNode("repl", "4", "16Gi").Obj()},
		drain:  []string{"old", "old2"},
		moving: []*corev1.Pod{bound(old1, "old"), bound(old2, "old2")},
		want:   "1 of 2 pods to move would wait",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &scheduling.Snapshot{Nodes: tc.nodes, NodePools: []*scheduling.NodePool{pool},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": catalog()}}
			drain := map[string]bool{}
			for _, n := range tc.drain {
				drain[n] = true
			}
			got, err := disruption.ValidateDrain(context.Background(), disruption.DrainCheck{Cluster: cluster, Drain: drain, Moving: tc.moving, Pending: tc.pending}, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("ValidateDrain = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExtraCapacity: when a drain check fails because the replacements were filled by other pods, the extra
// NodeClaims planned hold the moving pods that do not fit and nothing else of the provisioner's; with them
// registered, the drain check passes.
func TestExtraCapacity(t *testing.T) {
	a, b := pod("a", "3"), pod("b", "3")
	pool := test.SchedNodePool("default").Obj()
	cases := []struct {
		name    string
		nodes   []*scheduling.StateNode
		moving  []*corev1.Pod
		pending []*corev1.Pod
		extra   int    // NodeClaims planned
		why     string // substring of why; "" when extra capacity helps
		held    bool   // an extra NodeClaim may hold a pending pod in place of a moving one
		coming  []*scheduling.StateNode
	}{{
		name:   "room on the replacement: nothing more",
		nodes:  []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("repl", "8", "32Gi").Obj()},
		moving: []*corev1.Pod{bound(a, "old"), bound(b, "old")},
	}, {
		name: "the kube-scheduler filled the replacement: one more node for the pod left over",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(),
			test.SchedNode("repl", "8", "32Gi").Pods(pod("other", "4")).Obj()},
		moving: []*corev1.Pod{bound(a, "old"), bound(b, "old")},
		extra:  1,
	}, {
		name: "filled replacement, but the extra node another command planned this pass has room: nothing more",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(),
			test.SchedNode("repl", "8", "32Gi").Pods(pod("other", "4")).Obj()},
		moving: []*corev1.Pod{bound(a, "old"), bound(b, "old")},
		coming: []*scheduling.StateNode{test.SchedNode("coming-0", "8", "32Gi").Pods(pod("theirs", "4")).Obj()},
	}, {
		name: "filled replacement, and the extra node planned this pass is full: one more node",
		nodes: []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(),
			test.SchedNode("repl", "8", "32Gi").Pods(pod("other", "4")).Obj()},
		moving: []*corev1.Pod{bound(a, "old"), bound(b, "old")},
		coming: []*scheduling.StateNode{test.SchedNode("coming-0", "8", "32Gi").Pods(pod("theirs", "7")).Obj()},
		extra:  1,
	}, {
		name:    "a pending pod without room is left to the provisioner",
		nodes:   []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("repl", "8", "32Gi").Obj()},
		moving:  []*corev1.Pod{bound(a, "old"), bound(b, "old")},
		pending: []*corev1.Pod{pod("waiting", "7")},
		extra:   1,
	}, {
		name:    "the moving pods would take a pending pod's room: new capacity for whichever is left over",
		nodes:   []*scheduling.StateNode{test.SchedNode("old", "8", "32Gi").Obj(), test.SchedNode("repl", "4", "16Gi").Obj()},
		moving:  []*corev1.Pod{bound(a, "old")},
		pending: []*corev1.Pod{pod("waiting", "3")},
		extra:   1,
		held:    true,
	}, {
		name:   "a pod no instance type can hold: no launch",
		nodes:  []*scheduling.StateNode{test.SchedNode("old", "16", "64Gi").Obj(), test.SchedNode("repl", "8", "32Gi").Obj()},
		moving: []*corev1.Pod{bound(pod("huge", "12"), "old")},
		why:    "would not fit on new capacity either",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &scheduling.Snapshot{Nodes: tc.nodes, NodePools: []*scheduling.NodePool{pool},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": catalog()}}
			chk := disruption.DrainCheck{Cluster: cluster, Drain: map[string]bool{"old": true}, Moving: tc.moving, Pending: tc.pending, Coming: tc.coming}
			extra, why, err := disruption.ExtraCapacity(context.Background(), chk, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.why == "" && why != "" || tc.why != "" && !strings.Contains(why, tc.why) {
				t.Fatalf("why = %q, want %q", why, tc.why)
			}
			if len(extra) != tc.extra {
				t.Fatalf("%d extra nodeclaims, want %d: %+v", len(extra), tc.extra, extra)
			}
			moving := map[string]bool{}
			for _, p := range tc.moving {
				moving[p.Name] = true
			}
			if tc.held {
				for _, p := range tc.pending {
					moving[p.Name] = true
				}
			}
			for _, nc := range extra {
				if !slices.ContainsFunc(nc.Pods, func(k types.NamespacedName) bool { return moving[k.Name] }) {
					t.Errorf("extra nodeclaim %s holds no moving pod: %v", nc.Name, nc.Pods)
				}
			}
			// The drain goes once the extra nodes are there, empty (and those coming, as planned).
			with := *cluster
			with.Nodes = append(slices.Clone(cluster.Nodes), tc.coming...)
			for i, nc := range extra {
				with.Nodes = append(with.Nodes, test.SchedNode(fmt.Sprintf("extra-%d", i), nc.Requests.Cpu().String(), "32Gi").Obj())
			}
			chk.Cluster = &with
			if got, err := disruption.ValidateDrain(context.Background(), chk, scheduling.Options{}); err != nil || (got != "") != (tc.why != "") {
				t.Errorf("ValidateDrain with the extra nodes = %q, %v", got, err)
			}
		})
	}
}

// TestValidateDrainContended: two drains whose pods fit as planned, but not when the kube-scheduler gives the
// empty node meant for the large pod to the small one first.
func TestValidateDrainContended(t *testing.T) {
	big := bound(test.SchedPod("big").Labels("app", "big").Requests("3500m", "28Gi").Obj(), "old-big")
	small := bound(test.SchedPod("small").Labels("app", "small").Requests("900m", "3Gi").Obj(), "old-small")
	nodes := []*scheduling.StateNode{test.SchedNode("old-big", "4", "30Gi").Obj(), test.SchedNode("old-small", "2", "8Gi").Obj(),
		test.SchedNode("repl-xl", "4", "30Gi").Obj(), test.SchedNode("repl-m", "2", "8Gi").Obj()}
	cases := []struct {
		name    string
		drain   []string
		moving  []*corev1.Pod
		pending []*corev1.Pod
		planned string // ValidateDrain's answer (substring; "" passes)
		want    string // ValidateDrainContended's
	}{{
		name:   "the large pod alone",
		drain:  []string{"old-big"},
		moving: []*corev1.Pod{big},
	}, {
		name:   "the small pod alone",
		drain:  []string{"old-small"},
		moving: []*corev1.Pod{small},
	}, {
		name:   "both at once",
		drain:  []string{"old-big", "old-small"},
		moving: []*corev1.Pod{big, small},
		want:   "if the kube-scheduler put the smallest pods on the emptiest nodes first, pod default/big would not fit",
	}, {
		name:    "the small pod while the large one is on its way",
		drain:   []string{"old-big", "old-small"},
		moving:  []*corev1.Pod{small},
		pending: []*corev1.Pod{test.SchedPod("big-new").Labels("app", "big").Requests("3500m", "28Gi").Obj()},
		want:    "moving 1 pods would leave 1 more pending pods without a node (pod default/big-new",
	}, {
		name:    "the large pod first while a small one is on its way",
		drain:   []string{"old-big", "old-small"},
		moving:  []*corev1.Pod{big},
		pending: []*corev1.Pod{test.SchedPod("small-new").Labels("app", "small").Requests("900m", "3Gi").Obj()},
		want:    "pod default/big would not fit",
	}, {
		name:    "no room at all is ValidateDrain's answer too",
		drain:   []string{"old-big", "old-small", "repl-xl"},
		moving:  []*corev1.Pod{big},
		planned: "pod default/big would not fit",
		want:    "pod default/big would not fit",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			drain := map[string]bool{}
			for _, n := range tc.drain {
				drain[n] = true
			}
			chk := disruption.DrainCheck{Cluster: &scheduling.Snapshot{Nodes: nodes}, Drain: drain, Moving: tc.moving, Pending: tc.pending}
			planned, err := disruption.ValidateDrain(context.Background(), chk, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.planned == "" && planned != "" || tc.planned != "" && !strings.Contains(planned, tc.planned) {
				t.Errorf("ValidateDrain = %q, want %q", planned, tc.planned)
			}
			got, err := disruption.ValidateDrainContended(context.Background(), chk, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("ValidateDrainContended = %q, want %q", got, tc.want)
			}
		})
	}
}
