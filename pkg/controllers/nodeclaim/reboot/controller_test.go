package reboot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/reboot"
	core "github.com/dovetail/dovetail/pkg/reboot"
	"github.com/dovetail/dovetail/pkg/test"
)

const testFinalizer = "test.dovetail.sh/keep"

type harness struct {
	t   *testing.T
	env *test.ControllerEnv
	rec *test.Recorder
	c   *reboot.Controller
}

func newHarness(t *testing.T) *harness {
	env := test.StartControllerEnv(t)
	rec := test.NewRecorder()
	d := env.Deps
	d.Recorder = rec
	return &harness{t: t, env: env, rec: rec, c: reboot.NewController(d)}
}

// rebooting creates a NodeClaim whose reboot repair asked for, and its Ready Node with boot ID b0.
func (h *harness) rebooting(name string) (string, string) {
	h.t.Helper()
	ctx := context.Background()
	providerID := h.env.Cloud.AddInstance(test.NodeClaim(name, "default").Obj())
	nc := test.NodeClaim(name, "default").ProviderID(providerID).Finalizer(testFinalizer).Obj()
	nc.Annotations = map[string]string{karpv1.RebootTerminationGracePeriodAnnotationKey: "5m0s"}
	h.must(h.env.Env.Client.Create(ctx, nc))
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name+"-node"
	nc.SetTrue(karpv1.ConditionTypeInitialized, karpv1.ReasonInitialized)
	nc.SetCondition(karpv1.ConditionTypeRebooting, metav1.ConditionTrue, karpv1.RebootReasonRequested, "rebooting for AcceleratedHardwareReady")
	h.must(h.env.Env.Client.Status().Update(ctx, nc))
	n := test.Node(name+"-node", providerID).Ready(true).Obj()
	status := n.Status
	status.NodeInfo.BootID = "b0"
	h.must(h.env.Env.Client.Create(ctx, n))
	n.Status = status
	h.must(h.env.Env.Client.Status().Update(ctx, n))
	// The clock past the shortest drain: a node without pods is rebooted at once.
	h.must(h.env.Env.Client.Get(ctx, client.ObjectKey{Name: name}, nc))
	if d := nc.GetCondition(karpv1.ConditionTypeRebooting).LastTransitionTime.Add(core.MinDrainTime).Sub(h.env.Clock.Now()); d > 0 {
		h.env.Clock.Step(d)
	}
	return name, name + "-node"
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// until reconciles the NodeClaim until check holds (the controller reads from a cache).
func (h *harness) until(name string, check func(nc *karpv1.NodeClaim, node *corev1.Node) (bool, string)) {
	h.t.Helper()
	test.Eventually(h.t, 20*time.Second, func() (bool, string) {
		if _, err := h.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			return false, "reconcile: " + err.Error()
		}
		nc := &karpv1.NodeClaim{}
		if err := h.env.Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
			return false, err.Error()
		}
		node := &corev1.Node{}
		if err := h.env.Env.Client.Get(context.Background(), client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
		return check(nc, node)
	})
}

func hasTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == karpv1.RebootingTaintKey {
			return true
		}
	}
	return false
}

func rebootingReason(nc *karpv1.NodeClaim) string {
	c := nc.GetCondition(karpv1.ConditionTypeRebooting)
	if c == nil {
		return "none"
	}
	return string(c.Status) + "/" + c.Reason
}

func (h *harness) setNode(name string, change func(*corev1.Node)) {
	h.t.Helper()
	n := &corev1.Node{}
	h.must(h.env.Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n))
	change(n)
	h.must(h.env.Env.Client.Status().Update(context.Background(), n))
}

func TestRebootSucceeds(t *testing.T) {
	h := newHarness(t)
	nc, node := h.rebooting("gpu")
	h.until(nc, func(got *karpv1.NodeClaim, n *corev1.Node) (bool, string) {
		init := got.GetCondition(karpv1.ConditionTypeInitialized)
		ok := rebootingReason(got) == "True/RebootIssued" && got.Annotations[karpv1.RebootPreBootIDAnnotationKey] == "b0" && hasTaint(n) &&
			init != nil && init.Status == metav1.ConditionUnknown && init.Reason == karpv1.RebootReasonRebooting
		return ok, fmt.Sprintf("rebooting %s, pre-boot %q, taint %v, initialized %+v", rebootingReason(got),
			got.Annotations[karpv1.RebootPreBootIDAnnotationKey], hasTaint(n), init)
	})
	// The node is down, then back with a new boot ID.
	h.setNode(node, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return rebootingReason(got) == "True/RebootIssued", rebootingReason(got)
	})
	h.setNode(node, func(n *corev1.Node) {
		n.Status.NodeInfo.BootID = "b1"
		n.Status.Conditions[0].Status = corev1.ConditionTrue
	})
	h.until(nc, func(got *karpv1.NodeClaim, n *corev1.Node) (bool, string) {
		_, pre := got.Annotations[karpv1.RebootPreBootIDAnnotationKey]
		return rebootingReason(got) == "False/RebootSucceeded" && !pre && !hasTaint(n),
			fmt.Sprintf("rebooting %s, pre-boot annotation %v, taint %v", rebootingReason(got), pre, hasTaint(n))
	})
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return got.DeletionTimestamp.IsZero(), "deleted"
	})
	if got := h.env.Cloud.Rebooted(); len(got) != 1 {
		t.Errorf("reboots made: %v, want one", got)
	}
	if got := testutil.ToFloat64(h.env.Deps.Metrics.NodeReboots.WithLabelValues("succeeded")); got != 1 {
		t.Errorf("karpenter_nodes_reboots_total{result=succeeded} = %v, want 1", got)
	}
	if len(h.rec.WithReason(karpv1.EventReasonRebootObserved)) == 0 {
		t.Error("no RebootObserved event")
	}
	if len(h.rec.WithReason(karpv1.EventReasonRebootFailed)) != 0 {
		t.Errorf("RebootFailed events: %v", h.rec.WithReason(karpv1.EventReasonRebootFailed))
	}
}

func TestRebootNotBackIsReplaced(t *testing.T) {
	h := newHarness(t)
	nc, _ := h.rebooting("gpu")
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return rebootingReason(got) == "True/RebootIssued", rebootingReason(got)
	})
	h.env.Clock.Step(20*time.Minute + 30*time.Second)
	h.until(nc, func(got *karpv1.NodeClaim, n *corev1.Node) (bool, string) {
		_, bounded := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
		return !got.DeletionTimestamp.IsZero() && rebootingReason(got) == "False/RebootFailed" && bounded && !hasTaint(n),
			fmt.Sprintf("deleting %v, rebooting %s, drain bounded %v, taint %v", !got.DeletionTimestamp.IsZero(), rebootingReason(got), bounded, hasTaint(n))
	})
	if got := testutil.ToFloat64(h.env.Deps.Metrics.NodeReboots.WithLabelValues("recovery_timeout")); got != 1 {
		t.Errorf("karpenter_nodes_reboots_total{result=recovery_timeout} = %v, want 1", got)
	}
	ev := h.rec.WithReason(karpv1.EventReasonRebootFailed)
	if len(ev) == 0 || !strings.Contains(ev[0].Message, "observation window") {
		t.Errorf("RebootFailed events: %v", ev)
	}
}

func TestRebootRefusedIsReplacedAtOnce(t *testing.T) {
	h := newHarness(t)
	h.env.Cloud.InjectError("Reboot", &cloudprovider.RebootRefusedError{Err: errors.New("UnauthorizedOperation")})
	nc, _ := h.rebooting("gpu")
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return !got.DeletionTimestamp.IsZero() && rebootingReason(got) == "False/RebootFailed",
			fmt.Sprintf("deleting %v, rebooting %s", !got.DeletionTimestamp.IsZero(), rebootingReason(got))
	})
	if got := testutil.ToFloat64(h.env.Deps.Metrics.NodeReboots.WithLabelValues("provider_error")); got != 1 {
		t.Errorf("karpenter_nodes_reboots_total{result=provider_error} = %v, want 1", got)
	}
}

func TestRebootTransientErrorIsRetried(t *testing.T) {
	h := newHarness(t)
	h.env.Cloud.InjectError("Reboot", errors.New("RequestLimitExceeded"))
	nc, _ := h.rebooting("gpu")
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return rebootingReason(got) == "True/RebootIssued", rebootingReason(got)
	})
	if got := h.env.Cloud.Rebooted(); len(got) != 1 {
		t.Errorf("reboots made: %v, want one after the retry", got)
	}
}

func TestInvalidGracePeriodFailsWithoutReplacing(t *testing.T) {
	h := newHarness(t)
	nc, _ := h.rebooting("gpu")
	got := &karpv1.NodeClaim{}
	h.must(h.env.Env.Client.Get(context.Background(), client.ObjectKey{Name: nc}, got))
	got.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey] = "-1s"
	h.must(h.env.Env.Client.Update(context.Background(), got))
	// The controller reads from its cache: reconciling before the cache holds the new grace period would reboot.
	test.Eventually(t, 20*time.Second, func() (bool, string) {
		cached := &karpv1.NodeClaim{}
		if err := h.env.Client.Get(context.Background(), client.ObjectKey{Name: nc}, cached); err != nil {
			return false, err.Error()
		}
		v := cached.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey]
		return v == "-1s", "cached grace period " + v
	})
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return rebootingReason(got) == "False/RebootFailed", rebootingReason(got)
	})
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return got.DeletionTimestamp.IsZero(), "the NodeClaim was deleted"
	})
	if got := h.env.Cloud.Rebooted(); len(got) != 0 {
		t.Errorf("reboots made: %v, want none", got)
	}
}

// TestRebootDrainsFirst: before the reboot call the node is fenced and drained through the Eviction API: a pod
// goes, a pod its PodDisruptionBudget protects and a do-not-disrupt pod stay, and the call waits for them until
// the reboot's grace period (5m) ends; they then ride the reboot.
func TestRebootDrainsFirst(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	nc, node := h.rebooting("gpu")
	web := test.Pod("web").Label("app", "web").Running(node).Obj()
	db := test.Pod("db").Label("app", "db").Running(node).Obj()
	batch := test.Pod("batch").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Running(node).Obj()
	for _, p := range []*corev1.Pod{web, db, batch} {
		h.must(h.env.Env.Client.Create(ctx, p))
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		h.must(h.env.Env.Client.Status().Update(ctx, p))
	}
	// The budget allows no disruption, as the disruption controller (absent from envtest) would publish it.
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	h.must(h.env.Env.Client.Create(ctx, pdb))
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	h.must(h.env.Env.Client.Status().Update(ctx, pdb))
	// The controller reads from its cache: reconciling before it holds the pods and the budget would reboot an
	// empty node at once.
	test.Eventually(t, 20*time.Second, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := h.env.Client.List(ctx, pods, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		cachedPDB := &policyv1.PodDisruptionBudget{}
		if err := h.env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), cachedPDB); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 3 && cachedPDB.Status.DesiredHealthy == 1,
			fmt.Sprintf("cache holds %d pods, budget status %+v", len(pods.Items), cachedPDB.Status)
	})
	exists := func(name string) bool {
		return h.env.Env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &corev1.Pod{}) == nil
	}
	h.until(nc, func(got *karpv1.NodeClaim, n *corev1.Node) (bool, string) {
		return !exists("web") && hasTaint(n), fmt.Sprintf("web still there %v, taint %v", exists("web"), hasTaint(n))
	})
	got := &karpv1.NodeClaim{}
	h.must(h.env.Env.Client.Get(ctx, client.ObjectKey{Name: nc}, got))
	if !exists("db") || !exists("batch") {
		t.Errorf("evicted a pod its PodDisruptionBudget or do-not-disrupt protects: db %v, batch %v", exists("db"), exists("batch"))
	}
	if r := rebootingReason(got); r != "True/RebootRequested" {
		t.Errorf("rebooting %s while draining, want True/RebootRequested", r)
	}
	if calls := h.env.Cloud.Rebooted(); len(calls) != 0 {
		t.Errorf("reboot called before the drain ended: %v", calls)
	}
	if v := testutil.ToFloat64(h.env.Deps.Metrics.PodsDrained.WithLabelValues("unhealthy")); v != 1 {
		t.Errorf("karpenter_pods_drained_total{reason=unhealthy} = %v, want 1", v)
	}
	// The grace period ends: the reboot goes ahead with the pods left on the node.
	h.env.Clock.Step(5 * time.Minute)
	h.until(nc, func(got *karpv1.NodeClaim, _ *corev1.Node) (bool, string) {
		return rebootingReason(got) == "True/RebootIssued", rebootingReason(got)
	})
	if calls := h.env.Cloud.Rebooted(); len(calls) != 1 {
		t.Errorf("reboots made: %v, want one", calls)
	}
	if !exists("db") || !exists("batch") {
		t.Errorf("a pod left at the end of the grace period was deleted: db %v, batch %v", exists("db"), exists("batch"))
	}
}
