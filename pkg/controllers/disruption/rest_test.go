package disruption_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

// decisionsMade is how many decisions found nothing to do (karpenter_voluntary_disruption_decision_evaluation_duration
// with method none).
func decisionsMade(t *testing.T, m *metrics.Metrics) uint64 {
	t.Helper()
	out := &dto.Metric{}
	if err := m.DisruptionEvaluationDuration.WithLabelValues("none", "").(prometheus.Histogram).Write(out); err != nil {
		t.Fatal(err)
	}
	return out.GetHistogram().GetSampleCount()
}

// TestNoDecisionAtRest: once a decision found nothing to do, passes on unchanged objects do not decide again, a
// Node heartbeat included; a changed pod makes the next pass decide, and so does RestRecheck passing after a change
// no object shows (a price), or RestDecisionMaxAge passing since the last decision.
func TestNoDecisionAtRest(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Obj()); err != nil {
		t.Fatal(err)
	}
	// Not consolidatable (no Consolidatable condition) and not drifted: every pass finds nothing to do.
	clusterNode(t, e, "settled", "8", "16Gi", nil)
	bindPod(t, e, "web", "1", "settled")
	ctrl := disruption.NewController(e.Deps)
	decisions := func() uint64 { return decisionsMade(t, e.Deps.Metrics) }
	pass := func(want uint64, why string) {
		t.Helper()
		if err := ctrl.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if got := decisions(); got != want {
			t.Errorf("%s: %d decisions, want %d", why, got, want)
		}
	}
	pass(1, "first pass")
	e.Clock.Step(disruption.PollPeriod)
	pass(1, "second pass, nothing changed")

	// A heartbeat (a new resource version of the Node, its Ready condition's times) is not a change.
	n := &corev1.Node{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "settled"}, n); err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(time.Now().Add(time.Minute))
	}
	if err := e.Env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &corev1.Node{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "settled"}, got)
		return err == nil && got.ResourceVersion == n.ResourceVersion, "heartbeat not cached yet"
	})
	e.Clock.Step(disruption.PollPeriod)
	pass(1, "after a Node heartbeat")

	bindPod(t, e, "api", "1", "settled")
	e.Clock.Step(disruption.PollPeriod)
	pass(2, "after a pod was bound")
	e.Clock.Step(disruption.PollPeriod)
	pass(2, "at rest again")
	// RestRecheck later with nothing changed, objects or offerings: the decision stands.
	e.Clock.Step(disruption.RestRecheck)
	pass(2, "RestRecheck later, nothing changed")

	// A price is a change no object shows: seen at the next RestRecheck.
	its := fake.DefaultInstanceTypes()
	for i := range its[0].Offerings {
		its[0].Offerings[i].Price *= 0.5
	}
	e.Deps.CloudProvider.(*fake.CloudProvider).SetInstanceTypes(its)
	e.Clock.Step(disruption.PollPeriod)
	pass(2, "a price changed, before RestRecheck")
	e.Clock.Step(disruption.RestRecheck)
	pass(3, "RestRecheck after a price changed")

	// Nothing changed since: the decision stands until it is RestDecisionMaxAge old.
	for range int(disruption.RestDecisionMaxAge/disruption.RestRecheck) - 1 {
		e.Clock.Step(disruption.RestRecheck)
		pass(3, "RestRecheck later, nothing changed")
	}
	e.Clock.Step(disruption.RestRecheck)
	pass(4, "RestDecisionMaxAge after the last decision")
}

// TestDecisionAtRestEndsWithDoNotDisrupt: a pod's do-not-disrupt duration ending is a change no object shows;
// the pass after it decides.
func TestDecisionAtRestEndsWithDoNotDisrupt(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Obj()); err != nil {
		t.Fatal(err)
	}
	clusterNode(t, e, "held", "8", "16Gi", map[string]string{karpv1.ConditionTypeConsolidatable: karpv1.ConditionTypeConsolidatable})
	p := test.SchedPod("batch").Requests("1", "1Gi").Obj()
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "2m"}
	p.Spec.NodeName = "held"
	if err := e.Env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &metav1.Time{Time: e.Clock.Now()}
	if err := e.Env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &corev1.Pod{}
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(p), got)
		return err == nil && got.Status.StartTime != nil, "pod not cached yet"
	})
	ctrl := disruption.NewController(e.Deps)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	nc := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "held"}, nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := nc.Annotations[disruption.CommandAnnotationKey]; ok {
		t.Fatal("a command started on a node whose pod has do-not-disrupt for 2m")
	}
	e.Clock.Step(2*time.Minute + time.Second)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &karpv1.NodeClaim{}
		if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "held"}, got); err != nil {
			return false, err.Error()
		}
		_, ok := got.Annotations[disruption.CommandAnnotationKey]
		return ok || !got.DeletionTimestamp.IsZero(), "no command on the node after its pod's do-not-disrupt ended"
	})
}

// listCounter counts the lists a controller makes through it.
type listCounter struct {
	client.Client
	lists atomic.Int64
}

func (c *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	return c.Client.List(ctx, list, opts...)
}

// TestNoListingAtRest: with the informers watched, a pass at rest on a cluster where nothing changed since a
// decision that found nothing to do lists nothing; a pod bound since makes a pass decide again. RestRecheck later
// a pass lists, and decides only once the decision is RestDecisionMaxAge old.
func TestNoListingAtRest(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	if err := e.Env.Client.Create(ctx, test.NodePool("default").Obj()); err != nil {
		t.Fatal(err)
	}
	clusterNode(t, e, "settled", "8", "16Gi", nil)
	bindPod(t, e, "web", "1", "settled")
	d := e.Deps
	counter := &listCounter{Client: d.Client}
	d.Client = counter
	// As the controller runs: pods walked in the informer's store (ObserveCached), the rest listed.
	d.Cache = e.Manager.GetCache()
	ctrl := disruption.NewController(d)
	if err := ctrl.WatchChanges(ctx, e.Manager.GetCache()); err != nil {
		t.Fatal(err)
	}
	decisions := func() uint64 { return decisionsMade(t, d.Metrics) }
	// pass runs one pass a PollPeriod after the last and returns the lists it made.
	pass := func() int64 {
		t.Helper()
		e.Clock.Step(disruption.PollPeriod)
		before := counter.lists.Load()
		if err := ctrl.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		return counter.lists.Load() - before
	}
	// The informers replay what they hold to a new handler: passes list until those notifications are counted.
	test.Eventually(t, wait, func() (bool, string) { return pass() == 0, "passes at rest still list" })
	if got := decisions(); got != 1 {
		t.Errorf("%d decisions before any change, want 1", got)
	}

	bindPod(t, e, "api", "1", "settled")
	test.Eventually(t, wait, func() (bool, string) {
		pass()
		return decisions() == 2, "no decision after a pod was bound"
	})
	test.Eventually(t, wait, func() (bool, string) { return pass() == 0, "passes at rest after the decision still list" })
	if got := decisions(); got != 2 {
		t.Errorf("%d decisions at rest after the pod was bound, want 2", got)
	}
	// RestRecheck later the pass lists again, and finds that nothing it could not see changed either (the decision
	// stands, restMemo.renewed); RestDecisionMaxAge after the decision, it decides again.
	e.Clock.Step(disruption.RestRecheck)
	if n := pass(); n == 0 || decisions() != 2 {
		t.Errorf("RestRecheck later: %d lists and %d decisions, want lists and 2 decisions", n, decisions())
	}
	if n := pass(); n != 0 {
		t.Errorf("the pass after the decision was renewed made %d lists, want none", n)
	}
	e.Clock.Step(disruption.RestDecisionMaxAge)
	if n := pass(); n == 0 || decisions() != 3 {
		t.Errorf("RestDecisionMaxAge later: %d lists and %d decisions, want lists and 3 decisions", n, decisions())
	}
}

// TestNodeChangeCounted: a Node's heartbeat (new resource version and condition times) is not a change of what a
// decision reads; its labels, taints, allocatable and condition statuses are.
func TestNodeChangeCounted(t *testing.T) {
	base := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))
		}, false},
		{"label", func(n *corev1.Node) { n.Labels["team"] = "x" }, true},
		{"taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("3") }, true},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
	} {
		cur := base.DeepCopy()
		tc.change(cur)
		if got := disruption.NodeChanged(base, cur); got != tc.want {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.want)
		}
	}
}
