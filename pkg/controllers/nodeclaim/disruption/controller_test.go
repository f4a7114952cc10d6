package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

const timeout = 20 * time.Second

type harness struct {
	t   *testing.T
	env *test.ControllerEnv
	c   *Controller
	ctx context.Context
}

// newHarness starts envtest with the given controllers running in the manager; tests also call Reconcile
// directly to read its result. The fake clock starts on a whole second, as the API server stores times.
func newHarness(t *testing.T, controllers ...func(deps.Deps) test.Registrar) *harness {
	env := test.StartControllerEnv(t, controllers...)
	env.Clock.SetTime(env.Clock.Now().Truncate(time.Second))
	return &harness{t: t, env: env, c: NewController(env.Deps), ctx: context.Background()}
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.env.Env.Client.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// createNodeClaim creates nc, then writes the status it was built with (the API server ignores status on create).
func (h *harness) createNodeClaim(nc *karpv1.NodeClaim) {
	h.t.Helper()
	status := nc.Status.DeepCopy()
	h.create(nc)
	nc.Status = *status
	if err := h.env.Env.Client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("writing status of nodeclaim %s: %v", nc.Name, err)
	}
}

func (h *harness) nodeClaim(name string) *karpv1.NodeClaim {
	h.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		h.t.Fatalf("getting nodeclaim %s: %v", name, err)
	}
	return nc
}

// updateNodePool applies mutate to a fresh copy of the NodePool.
func (h *harness) updateNodePool(name string, mutate func(np *karpv1.NodePool)) {
	h.t.Helper()
	np := &karpv1.NodePool{}
	if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: name}, np); err != nil {
		h.t.Fatalf("getting nodepool %s: %v", name, err)
	}
	mutate(np)
	if err := h.env.Env.Client.Update(h.ctx, np); err != nil {
		h.t.Fatalf("updating nodepool %s: %v", name, err)
	}
}

// reconcileUntil runs Reconcile until check holds for its result and the NodeClaim read from the API server
// (the controller reads a cache that may lag behind the test's writes).
func (h *harness) reconcileUntil(name string, check func(res reconcile.Result, nc *karpv1.NodeClaim) (bool, string)) *karpv1.NodeClaim {
	h.t.Helper()
	var last *karpv1.NodeClaim
	test.Eventually(h.t, timeout, func() (bool, string) {
		res, err := h.c.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		if err != nil {
			return false, "reconcile: " + err.Error()
		}
		last = &karpv1.NodeClaim{}
		if err := h.env.Env.Client.Get(h.ctx, client.ObjectKey{Name: name}, last); err != nil {
			return false, err.Error()
		}
		return check(res, last)
	})
	return last
}

// conditionIs checks a True condition's reason and message, or its absence when reason is "".
func conditionIs(t, reason, message string) func(reconcile.Result, *karpv1.NodeClaim) (bool, string) {
	return func(_ reconcile.Result, nc *karpv1.NodeClaim) (bool, string) {
		return matchCondition(nc, t, reason, message)
	}
}

func matchCondition(nc *karpv1.NodeClaim, t, reason, message string) (bool, string) {
	c := nc.GetCondition(t)
	got := "absent"
	if c != nil {
		got = fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message)
	}
	want := "absent"
	if reason != "" {
		want = fmt.Sprintf("%s %s %q", metav1.ConditionTrue, reason, message)
	}
	return got == want, fmt.Sprintf("%s: got %s, want %s", t, got, want)
}

// requeueIs checks the reconcile result's RequeueAfter besides the condition.
func requeueIs(after time.Duration, check func(reconcile.Result, *karpv1.NodeClaim) (bool, string)) func(reconcile.Result, *karpv1.NodeClaim) (bool, string) {
	return func(res reconcile.Result, nc *karpv1.NodeClaim) (bool, string) {
		ok, msg := check(res, nc)
		if res.RequeueAfter != after {
			return false, fmt.Sprintf("%s; requeueAfter %s, want %s", msg, res.RequeueAfter, after)
		}
		return ok, msg
	}
}

func TestDrift(t *testing.T) {
	h := newHarness(t)
	now := h.env.Clock.Now()

	t.Run("nodepool hash", func(t *testing.T) {
		h.t = t
		h.create(test.NodePool("hashed").NodePoolHash("456", hashversion.NodePoolVersion).Obj())
		h.createNodeClaim(test.NodeClaim("hashed-a", "hashed").NodePoolHash("123", hashversion.NodePoolVersion).Launched(now).Obj())
		h.reconcileUntil("hashed-a", conditionIs(karpv1.ConditionTypeDrifted, karpv1.ReasonNodePoolDrifted,
			"nodepool hash 123 != 456: the template of nodepool hashed changed after the node was launched"))
		// The template is changed back: the NodeClaim matches again and the condition goes away.
		h.updateNodePool("hashed", func(np *karpv1.NodePool) { np.Annotations[karpv1.NodePoolHashAnnotationKey] = "123" })
		h.reconcileUntil("hashed-a", conditionIs(karpv1.ConditionTypeDrifted, "", ""))
	})

	t.Run("hash of another version is not compared", func(t *testing.T) {
		h.t = t
		h.create(test.NodePool("rehashed").NodePoolHash("456", hashversion.NodePoolVersion).Obj())
		h.createNodeClaim(test.NodeClaim("rehashed-a", "rehashed").NodePoolHash("123", "older").Launched(now).
			Condition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, karpv1.ReasonNodePoolDrifted, now).Obj())
		h.reconcileUntil("rehashed-a", conditionIs(karpv1.ConditionTypeDrifted, "", ""))
	})

	t.Run("requirements", func(t *testing.T) {
		h.t = t
		h.create(test.NodePool("zonal").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b").Obj())
		h.createNodeClaim(test.NodeClaim("zonal-a", "zonal").Label(corev1.LabelTopologyZone, "zone-a").Launched(now).Obj())
		h.reconcileUntil("zonal-a", conditionIs(karpv1.ConditionTypeDrifted, karpv1.ReasonRequirementsDrifted,
			"label topology.kubernetes.io/zone=zone-a no longer allowed by nodepool requirements (topology.kubernetes.io/zone In [zone-b])"))
		h.updateNodePool("zonal", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"zone-a", "zone-b"}
		})
		h.reconcileUntil("zonal-a", conditionIs(karpv1.ConditionTypeDrifted, "", ""))
	})

	t.Run("requirements against the node's labels", func(t *testing.T) {
		h.t = t
		h.create(test.NodePool("amd").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, karpv1.ArchitectureAmd64).Obj())
		h.create(test.Node("amd-node", "fake:///zone-a/i-amd").Label(corev1.LabelArchStable, karpv1.ArchitectureArm64).Obj())
		h.createNodeClaim(test.NodeClaim("amd-a", "amd").ProviderID("fake:///zone-a/i-amd").NodeName("amd-node").Launched(now).Obj())
		h.reconcileUntil("amd-a", conditionIs(karpv1.ConditionTypeDrifted, karpv1.ReasonRequirementsDrifted,
			"label kubernetes.io/arch=arm64 no longer allowed by nodepool requirements (kubernetes.io/arch In [amd64])"))
	})

	t.Run("cloud provider", func(t *testing.T) {
		h.t = t
		t.Cleanup(func() { h.env.Cloud.SetDrift("") })
		h.create(test.NodePool("imaged").Obj())
		h.createNodeClaim(test.NodeClaim("imaged-a", "imaged").Launched(now).Obj())
		// Not drifted: only the periodic re-check for cloud drift is scheduled (expireAfter is 720h).
		h.reconcileUntil("imaged-a", requeueIs(driftRecheck, conditionIs(karpv1.ConditionTypeDrifted, "", "")))
		h.env.Cloud.SetDrift(karpv1.ReasonAMIDrift)
		h.reconcileUntil("imaged-a", conditionIs(karpv1.ConditionTypeDrifted, karpv1.ReasonAMIDrift,
			"the fake cloud provider reports that the instance no longer matches its node class: AMIDrift"))
		// The cloud cannot answer: the condition keeps its value and the error is returned.
		h.env.Cloud.InjectError("IsDrifted", errors.New("throttled"))
		if _, err := h.c.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "imaged-a"}}); err == nil || !strings.Contains(err.Error(), "throttled") {
			t.Errorf("reconcile with a failing IsDrifted: err = %v, want the cloud's error", err)
		}
		if ok, msg := matchCondition(h.nodeClaim("imaged-a"), karpv1.ConditionTypeDrifted, karpv1.ReasonAMIDrift,
			"the fake cloud provider reports that the instance no longer matches its node class: AMIDrift"); !ok {
			t.Error(msg)
		}
		h.env.Cloud.SetDrift("")
		h.reconcileUntil("imaged-a", conditionIs(karpv1.ConditionTypeDrifted, "", ""))
	})

	t.Run("not launched", func(t *testing.T) {
		h.t = t
		h.create(test.NodePool("pending").NodePoolHash("456", hashversion.NodePoolVersion).Obj())
		h.createNodeClaim(test.NodeClaim("pending-a", "pending").NodePoolHash("123", hashversion.NodePoolVersion).
			Condition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, karpv1.ReasonNodePoolDrifted, now).Obj())
		h.reconcileUntil("pending-a", conditionIs(karpv1.ConditionTypeDrifted, "", ""))
	})
}

func TestConsolidatable(t *testing.T) {
	h := newHarness(t)
	clk := h.env.Clock
	initialized := clk.Now()
	consolidatable := func(since time.Time, after string) func(reconcile.Result, *karpv1.NodeClaim) (bool, string) {
		return conditionIs(karpv1.ConditionTypeConsolidatable, ReasonConsolidatable, fmt.Sprintf(
			"no pod scheduled to or removed from the node since %s, longer than consolidateAfter (%s)", since.UTC().Format(time.RFC3339), after))
	}
	absent := conditionIs(karpv1.ConditionTypeConsolidatable, "", "")

	h.create(test.NodePool("quiet").ConsolidateAfter("3m").Obj())
	h.createNodeClaim(test.NodeClaim("quiet-a", "quiet").Initialized(initialized).Obj())
	h.createNodeClaim(test.NodeClaim("quiet-launching", "quiet").Launched(initialized).
		Condition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, ReasonConsolidatable, initialized).Obj())
	h.create(test.NodePool("never").ConsolidateAfter(karpv1.Never).Obj())
	h.createNodeClaim(test.NodeClaim("never-a", "never").Initialized(initialized).
		Condition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, ReasonConsolidatable, initialized).Obj())

	// Just initialized: not consolidatable, and the controller comes back when consolidateAfter has passed.
	h.reconcileUntil("quiet-a", requeueIs(3*time.Minute, absent))
	clk.Step(3 * time.Minute)
	h.reconcileUntil("quiet-a", requeueIs(driftRecheck, consolidatable(initialized, "3m0s")))

	// A pod lands on the node: consolidateAfter starts over from the pod event.
	nc := h.nodeClaim("quiet-a")
	podEvent := clk.Now()
	nc.Status.LastPodEventTime = metav1.NewTime(podEvent)
	if err := h.env.Env.Client.Status().Update(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	h.reconcileUntil("quiet-a", requeueIs(3*time.Minute, absent))
	clk.Step(time.Minute)
	h.reconcileUntil("quiet-a", requeueIs(2*time.Minute, absent))
	clk.Step(2 * time.Minute)
	h.reconcileUntil("quiet-a", consolidatable(podEvent, "3m0s"))

	// Not initialized, or consolidateAfter Never: the condition is removed.
	h.reconcileUntil("quiet-launching", absent)
	h.reconcileUntil("never-a", absent)

	// The NodePool turns consolidation off.
	h.updateNodePool("quiet", func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	h.reconcileUntil("quiet-a", absent)
}

func TestExpiration(t *testing.T) {
	h := newHarness(t)
	clk := h.env.Clock
	h.create(test.NodePool("aging").Obj())
	h.createNodeClaim(test.NodeClaim("aging-a", "aging").ExpireAfter("1h").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).
		Finalizer(karpv1.TerminationFinalizer).Obj())
	h.createNodeClaim(test.NodeClaim("aging-never", "aging").ExpireAfter(karpv1.Never).Obj())
	created := h.nodeClaim("aging-a").CreationTimestamp.Time
	notDeleted := func(res reconcile.Result, nc *karpv1.NodeClaim) (bool, string) {
		return nc.DeletionTimestamp.IsZero(), "nodeclaim is being deleted"
	}

	// Not expired yet: requeued for the moment it expires.
	h.reconcileUntil("aging-a", requeueIs(created.Add(time.Hour).Sub(clk.Now()), notDeleted))
	clk.SetTime(created.Add(time.Hour - time.Second))
	h.reconcileUntil("aging-a", requeueIs(time.Second, notDeleted))
	if got := counter(t, h.env.Deps.Metrics.NodeClaimsDisrupted, "expired", "aging", karpv1.CapacityTypeSpot, "", metrics.TerminationModeGraceful); got != 0 {
		t.Fatalf("disrupted counter before expiry = %v", got)
	}

	clk.SetTime(created.Add(time.Hour))
	nc := h.reconcileUntil("aging-a", func(_ reconcile.Result, nc *karpv1.NodeClaim) (bool, string) {
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim not deleted"
	})
	if diff := cmp.Diff([]string{karpv1.TerminationFinalizer}, nc.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	want := "Normal Expired Deleting NodeClaim: it is 1h0m0s old, past its expireAfter of 1h0m0s"
	if got := events(h); !cmp.Equal([]string{want}, got) {
		t.Errorf("events = %q, want [%q]", got, want)
	}
	if got := counter(t, h.env.Deps.Metrics.NodeClaimsDisrupted, "expired", "aging", karpv1.CapacityTypeSpot, "", metrics.TerminationModeGraceful); got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=expired,nodepool=aging,capacity_type=spot} = %v, want 1", got)
	}

	// expireAfter Never: nothing to wait for, however old.
	clk.Step(10000 * time.Hour)
	h.reconcileUntil("aging-never", requeueIs(0, notDeleted))
}

// TestNodePoolChangeReevaluatesNodeClaims runs the controller in the manager: changing a NodePool's requirements
// re-evaluates its NodeClaims through the NodePool watch.
func TestNodePoolChangeReevaluatesNodeClaims(t *testing.T) {
	h := newHarness(t, func(d deps.Deps) test.Registrar { return NewController(d) })
	now := h.env.Clock.Now()
	h.create(test.NodePool("watched").Obj())
	h.createNodeClaim(test.NodeClaim("watched-a", "watched").Label(corev1.LabelTopologyZone, "zone-a").Initialized(now).Obj())
	// consolidateAfter defaults to 0s: Consolidatable shows the controller has evaluated the NodeClaim.
	poll := func(t string, reason, message string) {
		h.t.Helper()
		test.Eventually(h.t, timeout, func() (bool, string) {
			return matchCondition(h.nodeClaim("watched-a"), t, reason, message)
		})
	}
	poll(karpv1.ConditionTypeConsolidatable, ReasonConsolidatable, fmt.Sprintf(
		"no pod scheduled to or removed from the node since %s, longer than consolidateAfter (0s)", now.UTC().Format(time.RFC3339)))
	poll(karpv1.ConditionTypeDrifted, "", "")
	h.updateNodePool("watched", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "zone-a"))
	})
	poll(karpv1.ConditionTypeDrifted, karpv1.ReasonRequirementsDrifted,
		"label topology.kubernetes.io/zone=zone-a no longer allowed by nodepool requirements (topology.kubernetes.io/zone NotIn [zone-a])")
}

// events drains the recorder.
func events(h *harness) []string {
	var out []string
	for {
		select {
		case e := <-h.env.Recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func counter(t *testing.T, c *prometheus.CounterVec, labelValues ...string) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.WithLabelValues(labelValues...).Write(m); err != nil {
		t.Fatalf("reading counter %v: %v", labelValues, err)
	}
	return m.GetCounter().GetValue()
}
