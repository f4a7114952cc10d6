package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/counter"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/hash"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/readiness"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/test"
)

const timeout = 30 * time.Second

// TestWalkingSkeleton drives a pending pod to a Ready NodeClaim inside envtest: provisioning creates the
// NodeClaim, lifecycle launches it on the fake cloud, the test plays the kubelet, lifecycle registers and
// initializes it, and the NodePool counts it. Deleting the NodePool deletes its NodeClaims. Provisioning solves
// with its default solver, the scheduler of pkg/scheduling behind solver/adapter.
func TestWalkingSkeleton(t *testing.T) {
	var prov *provisioning.Controller
	env := test.StartControllerEnv(t,
		func(d deps.Deps) test.Registrar {
			prov = provisioning.NewController(d)
			return prov
		},
		func(d deps.Deps) test.Registrar { return lifecycle.NewController(d) },
		func(d deps.Deps) test.Registrar { return hash.NewController(d) },
		func(d deps.Deps) test.Registrar { return counter.NewController(d) },
		func(d deps.Deps) test.Registrar { return readiness.NewController(d) },
	)
	ctx := context.Background()
	kube := env.Env.Client

	nodeClass := test.EC2NodeClass("default", "test-cluster").Obj()
	must(t, kube.Create(ctx, nodeClass))
	meta.SetStatusCondition(&nodeClass.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	must(t, kube.Status().Update(ctx, nodeClass))

	must(t, kube.Create(ctx, test.NodePool("default").Obj()))
	np := &karpv1.NodePool{}
	test.Eventually(t, timeout, func() (bool, string) {
		must(t, kube.Get(ctx, client.ObjectKey{Name: "default"}, np))
		return np.IsTrue(karpv1.ConditionTypeReady) && np.Annotations[karpv1.NodePoolHashAnnotationKey] != "",
			fmt.Sprintf("nodepool conditions %v annotations %v", np.Status.Conditions, np.Annotations)
	})

	createPending(t, kube, test.Pod("web").Requests("1", "1Gi").Obj())
	createPending(t, kube, test.Pod("nowhere").Requests("100m", "").NodeSelector("team", "absent").Obj())

	// The batch window closes on the fake clock: advance it until the NodeClaim appears.
	var nc karpv1.NodeClaim
	test.Eventually(t, timeout, func() (bool, string) {
		env.Clock.Step(time.Second)
		list := &karpv1.NodeClaimList{}
		must(t, kube.List(ctx, list))
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d nodeclaims", len(list.Items))
		}
		nc = list.Items[0]
		return true, ""
	})
	if !regexp.MustCompile(`^default-[a-z0-9]{5}$`).MatchString(nc.Name) {
		t.Errorf("nodeclaim name %q, want default-<5 random chars>", nc.Name)
	}
	if nc.Labels[karpv1.NodePoolLabelKey] != "default" || len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].UID != np.UID {
		t.Errorf("nodeclaim labels %v owners %v", nc.Labels, nc.OwnerReferences)
	}
	if nc.Annotations[karpv1.NodePoolHashAnnotationKey] != np.Annotations[karpv1.NodePoolHashAnnotationKey] {
		t.Errorf("nodeclaim hash %q, nodepool hash %q", nc.Annotations[karpv1.NodePoolHashAnnotationKey], np.Annotations[karpv1.NodePoolHashAnnotationKey])
	}
	if cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]; cpu.String() != "1" {
		t.Errorf("nodeclaim cpu request %s, want 1", cpu.String())
	}
	if its := karpv1.RequirementsFor(nc.Spec.Requirements, corev1.LabelInstanceTypeStable); len(its) != 1 ||
		!slices.Contains(its[0].Values, "fake-medium") || slices.Contains(its[0].Values, "fake-small") {
		t.Errorf("instance type requirement %v, want fake-medium (cheapest with room for 1 cpu) and not fake-small", its)
	}

	test.Eventually(t, timeout, func() (bool, string) {
		must(t, kube.Get(ctx, client.ObjectKey{Name: nc.Name}, &nc))
		return nc.IsTrue(karpv1.ConditionTypeLaunched), fmt.Sprintf("conditions %v", nc.Status.Conditions)
	})
	node := test.Node("node-1", nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint()).Ready(true).Obj()
	status := node.Status
	must(t, kube.Create(ctx, node))
	// Play the kubelet (status) and the node lifecycle controller (drop the not-ready taint admission put on the
	// new Node). Registration patches the Node concurrently, so retry on conflicts.
	test.Eventually(t, timeout, func() (bool, string) {
		n := &corev1.Node{}
		must(t, kube.Get(ctx, client.ObjectKey{Name: "node-1"}, n))
		n.Status = status
		if err := kube.Status().Update(ctx, n); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	test.Eventually(t, timeout, func() (bool, string) {
		n := &corev1.Node{}
		must(t, kube.Get(ctx, client.ObjectKey{Name: "node-1"}, n))
		var kept []corev1.Taint
		for _, tt := range n.Spec.Taints {
			if tt.Key != corev1.TaintNodeNotReady {
				kept = append(kept, tt)
			}
		}
		n.Spec.Taints = kept
		if err := kube.Update(ctx, n); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	test.Eventually(t, timeout, func() (bool, string) {
		must(t, kube.Get(ctx, client.ObjectKey{Name: nc.Name}, &nc))
		return nc.IsTrue(karpv1.ConditionTypeReady), fmt.Sprintf("conditions %v", nc.Status.Conditions)
	})
	n := &corev1.Node{}
	must(t, kube.Get(ctx, client.ObjectKey{Name: "node-1"}, n))
	for _, l := range []string{karpv1.NodeRegisteredLabelKey, karpv1.NodeInitializedLabelKey} {
		if n.Labels[l] != "true" {
			t.Errorf("node label %s = %q", l, n.Labels[l])
		}
	}
	test.Eventually(t, timeout, func() (bool, string) {
		must(t, kube.Get(ctx, client.ObjectKey{Name: "default"}, np))
		nodes := np.Status.Resources[counter.ResourceNodes]
		cpu := np.Status.Resources[corev1.ResourceCPU]
		return np.Status.Nodes != nil && *np.Status.Nodes == 1 && nodes.Value() == 1 && cpu.String() == "2",
			fmt.Sprintf("nodepool status %+v", np.Status.Resources)
	})

	// The pod is still pending (no kube-scheduler here): another pass must count the node, not launch again.
	must(t, prov.Schedule(ctx))
	list := &karpv1.NodeClaimList{}
	must(t, kube.List(ctx, list))
	if len(list.Items) != 1 {
		t.Errorf("%d nodeclaims after a second pass, want 1", len(list.Items))
	}

	events := drain(env)
	for _, want := range []string{"Nominated Pod should schedule on: nodeclaim/" + nc.Name, "FailedScheduling Failed to find capacity"} {
		if !strings.Contains(events, want) {
			t.Errorf("events do not contain %q:\n%s", want, events)
		}
	}

	must(t, kube.Delete(ctx, np))
	test.Eventually(t, timeout, func() (bool, string) {
		must(t, kube.Get(ctx, client.ObjectKey{Name: nc.Name}, &nc))
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim of the deleted nodepool not deleted"
	})
}

func createPending(t *testing.T, kube client.Client, pod *corev1.Pod) {
	t.Helper()
	must(t, kube.Create(context.Background(), pod))
	pod.Status = test.Pod("x").Unschedulable().Obj().Status
	must(t, kube.Status().Update(context.Background(), pod))
}

func drain(env *test.ControllerEnv) string {
	var out []string
	for {
		select {
		case e := <-env.Recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
