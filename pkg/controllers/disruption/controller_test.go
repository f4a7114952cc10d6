package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

const wait = 20 * time.Second

// drifted creates a NodePool, an initialized and drifted NodeClaim "old" with its Node (fake-xlarge, 8 cpu) and
// a pod bound there, and waits until the cache shows them.
func drifted(t *testing.T, e *test.ControllerEnv) {
	t.Helper()
	if err := e.Env.Client.Create(context.Background(), test.NodePool("default").Obj()); err != nil {
		t.Fatal(err)
	}
	driftedNode(t, e, "old", "web")
}

// driftedNode creates an initialized and drifted NodeClaim of NodePool "default" with its Node (fake-xlarge,
// 8 cpu) named name and a pod of 1 cpu bound there, and waits until the cache shows them.
func driftedNode(t *testing.T, e *test.ControllerEnv, name, podName string) {
	t.Helper()
	clusterNode(t, e, name, "8", "16Gi", map[string]string{karpv1.ConditionTypeDrifted: karpv1.ReasonNodePoolDrifted})
	bindPod(t, e, podName, "1", name)
}

// createNode creates n with its status, and without the not-ready taint the API server's admission gives a new
// Node (envtest runs no node lifecycle controller to remove it once the Node is Ready).
func createNode(t *testing.T, c client.Client, n *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	status := n.Status
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status = status
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = nil
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// replacementOf waits until the cache shows a NodeClaim launched for a disruption command and returns it.
func replacementOf(t *testing.T, e *test.ControllerEnv) *karpv1.NodeClaim {
	t.Helper()
	var out *karpv1.NodeClaim
	test.Eventually(t, wait, func() (bool, string) {
		l := &karpv1.NodeClaimList{}
		if err := e.Client.List(context.Background(), l); err != nil {
			return false, err.Error()
		}
		for i := range l.Items {
			if l.Items[i].Annotations[disruption.ReplacementForAnnotationKey] != "" {
				out = &l.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d nodeclaims, none a replacement", len(l.Items))
	})
	return out
}

// ready registers a replacement as a Node (8 cpu, 16Gi, like the old node) and initializes it, then waits until
// the cache shows both.
func ready(t *testing.T, e *test.ControllerEnv, repl *karpv1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	c := e.Env.Client
	name := repl.Name + "-node"
	n := test.Node(name, "fake:///"+name).Ready(true).Capacity(corev1.ResourceCPU, "8").Capacity(corev1.ResourceMemory, "16Gi").
		Label(karpv1.NodePoolLabelKey, repl.Labels[karpv1.NodePoolLabelKey]).Obj()
	createNode(t, c, n)
	test.Eventually(t, wait, func() (bool, string) {
		got := &karpv1.NodeClaim{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(repl), got); err != nil {
			return false, err.Error()
		}
		got.Status.NodeName, got.Status.ProviderID = name, "fake:///"+name
		for _, ct := range karpv1.NodeClaimReadinessConditions() {
			got.SetTrue(ct, ct)
		}
		if err := c.Status().Update(ctx, got); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	test.Eventually(t, wait, func() (bool, string) {
		got, node := &karpv1.NodeClaim{}, &corev1.Node{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(repl), got); err != nil || !got.IsTrue(karpv1.ConditionTypeInitialized) {
			return false, "replacement not initialized in the cache"
		}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return false, "replacement node not in the cache"
		}
		return true, ""
	})
}

func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
}

// TestDriftedNodeIsReplacedAcrossARestart: a pass records the command on the drifted NodeClaim, taints its Node
// and launches a replacement; a new controller (a restart) finds the command on the objects, waits while the
// replacement initializes, and then deletes the old NodeClaim.
func TestDriftedNodeIsReplacedAcrossARestart(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	if err := disruption.NewController(e.Deps).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	repl := replacementOf(t, e)
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if old.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Errorf("old nodeclaim has no %s annotation", disruption.CommandAnnotationKey)
	}
	if cond := old.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != string(karpv1.DisruptionReasonDrifted) {
		t.Errorf("DisruptionReason condition = %+v, want True/Drifted", cond)
	}
	node := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
		t.Fatal(err)
	}
	if !tainted(node) {
		t.Errorf("node old has no %s taint: %+v", karpv1.DisruptedTaintKey, node.Spec.Taints)
	}

	// The controller restarts: a new instance, no memory of the command.
	restarted := disruption.NewController(e.Deps)
	if err := restarted.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil || !old.DeletionTimestamp.IsZero() {
		t.Fatalf("old nodeclaim deleted before its replacement initialized (err %v)", err)
	}
	ready(t, e, repl)
	if err := restarted.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if old.DeletionTimestamp.IsZero() {
		t.Error("old nodeclaim not deleted after its replacement initialized")
	}
}

// TestCommandAbandonedWhenReplacementDoesNotInitialize: a replacement that does not initialize within
// ReplacementTimeout ends the command; the old node loses its record, condition and taint and stays.
func TestCommandAbandonedWhenReplacementDoesNotInitialize(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	c := disruption.NewController(e.Deps)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	replacementOf(t, e)
	test.Eventually(t, wait, func() (bool, string) {
		old := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "old"}, old)
		return err == nil && old.Annotations[disruption.CommandAnnotationKey] != "", "command not cached yet"
	})
	e.Clock.Step(disruption.ReplacementTimeout + time.Second)
	// Drain the recorder of the events so far.
	for len(e.Recorder.Events) > 0 {
		<-e.Recorder.Events
	}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if !old.DeletionTimestamp.IsZero() {
		t.Fatal("old nodeclaim deleted although its replacement never initialized")
	}
	if _, ok := old.Annotations[disruption.CommandAnnotationKey]; ok {
		t.Errorf("abandoned command still recorded on the old nodeclaim")
	}
	if cond := old.GetCondition(karpv1.ConditionTypeDisruptionReason); cond != nil {
		t.Errorf("DisruptionReason condition left after abandoning: %+v", cond)
	}
	node := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
		t.Fatal(err)
	}
	if tainted(node) {
		t.Errorf("node old still has the %s taint after the command was abandoned", karpv1.DisruptedTaintKey)
	}
	var aborted string
	for len(e.Recorder.Events) > 0 {
		if ev := <-e.Recorder.Events; strings.Contains(ev, disruption.ReasonDisruptionAborted) {
			aborted = ev
		}
	}
	if !strings.Contains(aborted, "not initialized within") {
		t.Errorf("no %s event saying the replacement did not initialize; last: %q", disruption.ReasonDisruptionAborted, aborted)
	}
}

// TestOrphanTaintRemoved: a disrupted taint on a node whose NodeClaim is neither deleting nor part of a command
// (a pass that stopped between tainting and recording) is removed by the next pass.
func TestOrphanTaintRemoved(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	node := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
		t.Fatal(err)
	}
	// The NodeClaim is not drifted any more, so the pass has nothing to start.
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	old.ClearCondition(karpv1.ConditionTypeDrifted)
	if err := e.Env.Client.Status().Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint())
	if err := e.Env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		n, nc := &corev1.Node{}, &karpv1.NodeClaim{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "old"}, n); err != nil {
			return false, err.Error()
		}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "old"}, nc); err != nil {
			return false, err.Error()
		}
		return tainted(n) && !nc.IsTrue(karpv1.ConditionTypeDrifted), "taint or condition change not cached yet"
	})
	if err := disruption.NewController(e.Deps).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, node); err != nil {
		t.Fatal(err)
	}
	if tainted(node) {
		t.Errorf("orphan %s taint not removed: %+v", karpv1.DisruptedTaintKey, node.Spec.Taints)
	}
}

// TestDriftLeavesRoomForQueuedPods: a drifted node's pod would fit on the empty node "roomy", but a pod the
// kube-scheduler has not placed yet (no verdict: it waits in its queue) is about to take that room. The pass
// replaces the drifted node rather than deciding a deletion into that room, which its start check would refuse
// (pass after pass, in a drift of 5,000 nodes).
func TestDriftLeavesRoomForQueuedPods(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	clusterNode(t, e, "roomy", "2", "4Gi", nil)
	queued := test.SchedPod("queued").Requests("1500m", "1Gi").Obj()
	if err := e.Env.Client.Create(ctx, queued); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		return e.Client.Get(ctx, client.ObjectKeyFromObject(queued), &corev1.Pod{}) == nil, "queued pod not cached yet"
	})
	c := disruption.NewController(e.Deps)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	repl := replacementOf(t, e)
	if got := repl.Annotations[disruption.ReplacementForAnnotationKey]; !strings.HasPrefix(got, "old-") {
		t.Errorf("replacement %s is for command %q, want the drifted node's", repl.Name, got)
	}
}
