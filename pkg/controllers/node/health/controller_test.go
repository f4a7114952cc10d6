package health_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/node/health"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

const timeout = 30 * time.Second

// testFinalizer keeps deleted NodeClaims readable, in place of the termination controller.
const testFinalizer = "test.dovetail.sh/hold"

// addNode creates a NodeClaim and its Node in NodePool pool; unhealthySince, when set, gives the Node the fake
// provider's FakeHardwareReady=False condition (toleration 10 minutes) from that time.
func addNode(t *testing.T, env *test.ControllerEnv, name, pool string, unhealthySince *time.Time) {
	t.Helper()
	addNodeWith(t, env, name, pool, unhealthySince, nodeOpts{})
}

// nodeOpts are what addNodeWith adds to addNode's objects.
type nodeOpts struct {
	nodeAnn, claimAnn map[string]string
	// initialized marks the NodeClaim Initialized (disruption budgets count only initialized nodes).
	initialized bool
}

// addNodeWith is addNode with annotations on the Node and on the NodeClaim, and the NodeClaim initialized.
func addNodeWith(t *testing.T, env *test.ControllerEnv, name, pool string, unhealthySince *time.Time, o nodeOpts) {
	t.Helper()
	nodeAnn, claimAnn := o.nodeAnn, o.claimAnn
	ctx := context.Background()
	kube := env.Env.Client
	pid := fake.ProviderIDPrefix + "zone-a/" + name
	nc := test.NodeClaim(name, pool).Finalizer(testFinalizer).Label(karpv1.CapacityTypeLabelKey, "on-demand").Obj()
	nc.Annotations = claimAnn
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName, nc.Status.ImageID = pid, name, "ami-1"
	if o.initialized {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized,
			Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()})
	}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := test.Node(name, pid).Label(karpv1.NodePoolLabelKey, pool).Ready(true).Obj()
	node.Annotations = nodeAnn
	status := node.Status
	if unhealthySince != nil {
		status.Conditions = append(status.Conditions, corev1.NodeCondition{Type: "FakeHardwareReady", Status: corev1.ConditionFalse,
			Reason: "Test", LastTransitionTime: metav1.NewTime(*unhealthySince)})
	}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = status
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T) *test.ControllerEnv {
	return test.StartControllerEnv(t, func(d deps.Deps) test.Registrar { return health.NewController(d) })
}

// TestRepairsPastToleration: a node unhealthy for longer than its policy's toleration has its NodeClaim deleted
// with a termination deadline of now (the drain then waits for no PodDisruptionBudget), an event and the metrics;
// a node still within its toleration and a healthy one are left alone.
func TestRepairsPastToleration(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	now := env.Clock.Now()
	long, recent := now.Add(-11*time.Minute), now.Add(-5*time.Minute)
	addNode(t, env, "sick", "default", &long)
	addNode(t, env, "recent", "default", &recent)
	for i := 0; i < 8; i++ {
		addNode(t, env, fmt.Sprintf("well-%d", i), "default", nil)
	}
	nc := &karpv1.NodeClaim{}
	test.Eventually(t, timeout, func() (bool, string) {
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, nc); err != nil {
			return false, err.Error()
		}
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim sick not deleted"
	})
	if got, want := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], now.UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want %q (now)", got, want)
	}
	if got := testutil.ToFloat64(env.Deps.Metrics.NodeClaimsDisrupted.WithLabelValues("unhealthy", "default", "on-demand", "", metrics.TerminationModeGraceful)); got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=unhealthy} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(env.Deps.Metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues("fake_hardware_ready", "default", "on-demand", "ami-1")); got != 1 {
		t.Errorf("karpenter_nodeclaims_unhealthy_disrupted_total = %v, want 1", got)
	}
	found := false
	for !found {
		select {
		case e := <-env.Recorder.Events:
			found = strings.HasPrefix(e, "Normal DisruptionTerminating Disrupting: Unhealthy: unhealthy (FakeHardwareReady=False")
		case <-time.After(timeout):
			t.Fatal("no DisruptionTerminating event")
		}
	}
	// The repair of sick was decided after every node had been looked at once (the cache holds them all): the
	// others are still there.
	for _, name := range []string{"recent", "well-0"} {
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s deleted (err %v)", name, err)
		}
	}
}

// TestHoldsBackOverLimit: 3 of 5 nodes of a NodePool unhealthy is above 20%: nothing is repaired and each says
// why with a NodeRepairBlocked event.
func TestHoldsBackOverLimit(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	// The nodes are created one by one: with the fake's 10-minute toleration, the first unhealthy one would be
	// repaired while it is still alone in its NodePool. Create them under a long toleration, wait until the cache
	// holds all five, then shorten it and touch the unhealthy ones.
	policies := fake.DefaultRepairPolicies()
	long := append([]cloudprovider.RepairPolicy(nil), policies...)
	for i := range long {
		long[i].TolerationDuration = 100 * time.Hour
	}
	env.Cloud.SetRepairPolicies(long)
	since := env.Clock.Now().Add(-time.Hour)
	for i := 0; i < 5; i++ {
		var s *time.Time
		if i < 3 {
			s = &since
		}
		addNode(t, env, fmt.Sprintf("n-%d", i), "gpu", s)
	}
	test.Eventually(t, timeout, func() (bool, string) {
		nodes := &corev1.NodeList{}
		if err := env.Client.List(ctx, nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: "gpu"}); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, node := range nodes.Items {
			if len(node.Status.Conditions) > 0 {
				n++
			}
		}
		return n == 5, fmt.Sprintf("%d nodes with status in the cache", n)
	})
	env.Cloud.SetRepairPolicies(policies)
	for i := 0; i < 3; i++ {
		node := &corev1.Node{}
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("n-%d", i)}, node); err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: "TestTouched", Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(env.Clock.Now())})
		if err := env.Env.Client.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	blocked := 0
	deadline := time.After(timeout)
	for blocked < 3 {
		select {
		case e := <-env.Recorder.Events:
			if strings.HasPrefix(e, "Normal DisruptionTerminating") {
				t.Fatalf("a node was repaired: %s", e)
			}
			if strings.HasPrefix(e, "Warning NodeRepairBlocked ") {
				if want := "Warning NodeRepairBlocked 3 of 5 nodes in NodePool gpu are unhealthy, more than the 20% limit (1)"; e != want {
					t.Errorf("event %q, want %q", e, want)
				}
				blocked++
			}
		case <-deadline:
			t.Fatalf("%d NodeRepairBlocked events, want 3", blocked)
		}
	}
	list := &karpv1.NodeClaimList{}
	if err := env.Env.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, nc := range list.Items {
		if !nc.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s deleted while the NodePool is over the limit", nc.Name)
		}
	}
}

// TestDoNotRepair: karpenter.sh/do-not-repair: "true" on the Node or on its NodeClaim keeps an unhealthy node from
// being repaired (Karpenter v1.15); a node without it, unhealthy as long, is repaired.
func TestDoNotRepair(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	long := env.Clock.Now().Add(-11 * time.Minute)
	keep := map[string]string{karpv1.DoNotRepairAnnotationKey: "true"}
	// Healthy nodes first, so that no unhealthy node is judged in a group over the safety limit.
	for i := 0; i < 17; i++ {
		addNode(t, env, fmt.Sprintf("well-%d", i), "default", nil)
	}
	addNodeWith(t, env, "keep-node", "default", &long, nodeOpts{nodeAnn: keep})
	addNodeWith(t, env, "keep-claim", "default", &long, nodeOpts{claimAnn: keep})
	addNode(t, env, "sick", "default", &long)
	nc := &karpv1.NodeClaim{}
	test.Eventually(t, timeout, func() (bool, string) {
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: "sick"}, nc); err != nil {
			return false, err.Error()
		}
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim sick not deleted"
	})
	// The annotated nodes were created first; reconcile them once more, directly, to see the decision.
	c := health.NewController(env.Deps)
	for _, name := range []string{"keep-node", "keep-claim"} {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatalf("Reconcile %s: %v", name, err)
		}
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s repaired despite %s (err %v)", name, karpv1.DoNotRepairAnnotationKey, err)
		}
	}
}

// TestUnhealthyBudget: a NodePool budget of 0 nodes for reason Unhealthy (Karpenter v1.15) holds back the repair
// of an initialized node with a NodeRepairBlocked event; in another NodePool, without such a budget, the same
// repair goes ahead.
func TestUnhealthyBudget(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	frozen := test.NodePool("frozen").Budget("0", karpv1.DisruptionReasonUnhealthy).Obj()
	open := test.NodePool("open").Budget("0", karpv1.DisruptionReasonDrifted).Obj()
	for _, np := range []*karpv1.NodePool{frozen, open} {
		if err := env.Env.Client.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	long := env.Clock.Now().Add(-11 * time.Minute)
	for _, pool := range []string{"frozen", "open"} {
		for i := 0; i < 9; i++ {
			addNodeWith(t, env, fmt.Sprintf("%s-well-%d", pool, i), pool, nil, nodeOpts{initialized: true})
		}
		addNodeWith(t, env, pool+"-sick", pool, &long, nodeOpts{initialized: true})
	}
	nc := &karpv1.NodeClaim{}
	test.Eventually(t, timeout, func() (bool, string) {
		if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: "open-sick"}, nc); err != nil {
			return false, err.Error()
		}
		return !nc.DeletionTimestamp.IsZero(), "nodeclaim open-sick not deleted"
	})
	found := false
	for !found {
		select {
		case e := <-env.Recorder.Events:
			found = strings.HasPrefix(e, "Warning NodeRepairBlocked repair held back: the disruption budgets of NodePool frozen allow no more disruption for reason Unhealthy")
		case <-time.After(timeout):
			t.Fatal("no NodeRepairBlocked event for NodePool frozen")
		}
	}
	if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: "frozen-sick"}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
		t.Errorf("nodeclaim frozen-sick repaired despite its NodePool's Unhealthy budget of 0 (err %v)", err)
	}
}
