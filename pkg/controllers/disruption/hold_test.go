package disruption_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

func held(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == disruption.ReplacementHoldTaintKey })
}

// holdNode puts the replacement hold on the named Node, as its registration does, and waits until the cache shows
// it.
func holdNode(t *testing.T, e *test.ControllerEnv, name, id string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: disruption.ReplacementHoldTaintKey, Value: id, Effect: corev1.TaintEffectPreferNoSchedule})
	if err := e.Env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &corev1.Node{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: name}, got)
		return err == nil && held(got), "hold not cached yet"
	})
}

// TestReplacementHeldUntilItsCommandDrains: a replacement's Node keeps its hold while its command waits, loses it
// in the pass that deletes the command's candidates, and a hold left on a Node whose command is over (abandoned,
// or a lift that failed) is lifted by the next pass.
func TestReplacementHeldUntilItsCommandDrains(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	c := disruption.NewController(e.Deps)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	repl := replacementOf(t, e)
	id := repl.Annotations[disruption.ReplacementForAnnotationKey]
	node := repl.Name + "-node"
	createNode(t, e.Env.Client, test.Node(node, "fake:///"+node).Ready(true).Capacity(corev1.ResourceCPU, "8").
		Capacity(corev1.ResourceMemory, "16Gi").Label(karpv1.NodePoolLabelKey, repl.Labels[karpv1.NodePoolLabelKey]).Obj())
	holdNode(t, e, node, id)
	setReplacement := func(initialized bool) {
		t.Helper()
		test.Eventually(t, wait, func() (bool, string) {
			got := &karpv1.NodeClaim{}
			if err := e.Env.Client.Get(ctx, client.ObjectKeyFromObject(repl), got); err != nil {
				return false, err.Error()
			}
			got.Status.NodeName, got.Status.ProviderID = node, "fake:///"+node
			for _, ct := range karpv1.NodeClaimReadinessConditions() {
				if ct != karpv1.ConditionTypeInitialized || initialized {
					got.SetTrue(ct, ct)
				}
			}
			if err := e.Env.Client.Status().Update(ctx, got); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		test.Eventually(t, wait, func() (bool, string) {
			got := &karpv1.NodeClaim{}
			err := e.Client.Get(ctx, client.ObjectKeyFromObject(repl), got)
			return err == nil && got.Status.NodeName == node && got.IsTrue(karpv1.ConditionTypeInitialized) == initialized, "replacement not cached yet"
		})
	}

	// Registered, not initialized: the command waits, its replacement held.
	setReplacement(false)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	n, old := &corev1.Node{}, &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil || !old.DeletionTimestamp.IsZero() {
		t.Fatalf("old nodeclaim deleted before its replacement initialized (err %v)", err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	if !held(n) {
		t.Errorf("hold lifted while the command waits: taints %+v", n.Spec.Taints)
	}

	// Initialized: the pass drains the candidate and lifts the hold.
	setReplacement(true)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil || old.DeletionTimestamp.IsZero() {
		t.Fatalf("old nodeclaim not deleted once its replacement initialized (err %v)", err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	if held(n) {
		t.Errorf("hold kept after the command drained: taints %+v", n.Spec.Taints)
	}

	// A hold whose command is over.
	holdNode(t, e, node, id)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	if held(n) {
		t.Errorf("hold of a command that drained not lifted: taints %+v", n.Spec.Taints)
	}
}

// TestReplacementNameTakenAbandonsTheCommand: a command whose replacement's name another NodeClaim has (here the
// replacement it created, taken from it by removing its annotation) can never create it; the next pass abandons
// the command at once, rather than after ReplacementTimeout, and the drifted node is planned again.
func TestReplacementNameTakenAbandonsTheCommand(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	c := disruption.NewController(e.Deps)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	repl := replacementOf(t, e)
	if recordID(t, e, "old") == "" {
		t.Fatal("no command recorded on the drifted node")
	}
	patch := client.MergeFrom(repl.DeepCopy())
	delete(repl.Annotations, disruption.ReplacementForAnnotationKey)
	if err := e.Env.Client.Patch(ctx, repl, patch); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(repl), got)
		return err == nil && got.Annotations[disruption.ReplacementForAnnotationKey] == "", "annotation removal not cached yet"
	})
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if id := recordID(t, e, "old"); id != "" {
		t.Fatalf("command %s still recorded on the drifted node; want it abandoned, its replacement's name taken", id)
	}
}
