package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// newTestController is the provisioner on the fake cloud provider with a fake clock, reading through c.
func newTestController(c client.Client) (*Controller, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := &settings.Settings{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second}
	return NewController(deps.Deps{Client: c, CloudProvider: fake.New(clk), Clock: clk,
		Recorder: record.NewFakeRecorder(100), Settings: s, Metrics: metrics.NewForTest()}), clk
}

// TestCreatedNodeClaimCountedBeforeTheCacheShowsIt runs two passes while the cache lags behind the API server
// and shows no NodeClaim: the second pass must count the NodeClaim the first created, not launch another.
func TestCreatedNodeClaimCountedBeforeTheCacheShowsIt(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), pod).Build()
	lagging := true
	cache := interceptor.NewClient(api, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*karpv1.NodeClaimList); ok && lagging {
				return nil
			}
			return c.List(ctx, list, opts...)
		},
	})
	c, clk := newTestController(cache)

	count := func() int {
		t.Helper()
		list := &karpv1.NodeClaimList{}
		if err := api.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	for pass := 1; pass <= 2; pass++ {
		if err := c.Schedule(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 1 {
			t.Fatalf("pass %d: %d nodeclaims, want 1", pass, n)
		}
	}

	// Once the cache shows it, the controller forgets its own copy; a NodeClaim the cache never shows is
	// forgotten after a while (it may have been deleted before the informer saw it).
	lagging = false
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.created) != 0 {
		t.Errorf("%d created nodeclaims remembered after the cache showed them", len(c.created))
	}
	lagging = true
	c.created["gone"] = createdClaim{nodeClaim: test.NodeClaim("gone", "default").Obj(), at: clk.Now()}
	clk.Step(createdClaimTTL + time.Second)
	if got := c.withCreated(nil); len(got) != 0 || len(c.created) != 0 {
		t.Errorf("expired created nodeclaim still counted: %d listed, %d remembered", len(got), len(c.created))
	}
}

// TestDeletedNodeClaimNotCountedAfterTheCacheShowedIt: a NodeClaim deleted seconds after launch (a spot
// interruption), with no provisioning pass in between, is no longer counted as capacity on its way once the
// informer has shown it: the pod it held gets a new NodeClaim at once, not after createdClaimTTL.
func TestDeletedNodeClaimNotCountedAfterTheCacheShowedIt(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), pod).Build()
	c, clk := newTestController(api)
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	list := &karpv1.NodeClaimList{}
	if err := api.List(ctx, list); err != nil || len(list.Items) != 1 {
		t.Fatalf("after the first pass: %d nodeclaims (%v), want 1", len(list.Items), err)
	}
	first := list.Items[0].Name
	// The informer delivers the NodeClaim's creation; then it is deleted before any other pass runs, and its pod
	// is pending again.
	c.CacheShows(first)
	gone := &list.Items[0]
	gone.Finalizers = nil
	if err := api.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	clk.Step(5 * time.Second)
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if err := api.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name == first {
		names := []string{}
		for _, nc := range list.Items {
			names = append(names, nc.Name)
		}
		t.Fatalf("after the deletion: nodeclaims %v, want one new nodeclaim for the pod (the deleted %s was still counted)", names, first)
	}
}

// TestUnschedulablePodsMetric: a pass sets the gauge per reason code, and a later pass without those pods sets
// it back to 0.
func TestUnschedulablePodsMetric(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	nowhere := test.Pod("nowhere").Requests("100m", "").NodeSelector("team", "absent").Unschedulable().Obj()
	huge := test.Pod("huge").Requests("512", "").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), nowhere, huge).Build()
	c, _ := newTestController(api)
	m := c.deps.Metrics
	gauge := func() map[string]float64 {
		out := map[string]float64{}
		for _, code := range []string{"Requirements", "Resources"} {
			out[code] = testutil.ToFloat64(m.PodsUnschedulable.WithLabelValues(code))
		}
		return out
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"Requirements": 1, "Resources": 1}, gauge()); diff != "" {
		t.Errorf("after the first pass (-want +got):\n%s", diff)
	}
	for _, p := range []*corev1.Pod{nowhere, huge} {
		if err := api.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"Requirements": 0, "Resources": 0}, gauge()); diff != "" {
		t.Errorf("after the pods went (-want +got):\n%s", diff)
	}
}

// TestPinsSurviveARestart: the NodeClaims a pass creates carry the UIDs of the pods planned on them, and a new
// controller (a restarted process) starts from that placement rather than planning the pods afresh.
func TestPinsSurviveARestart(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{test.NodePool("default").Obj()}
	for _, name := range []string{"a", "b", "c"} {
		p := test.Pod(name).Requests("1", "1Gi").Unschedulable().Obj()
		p.UID = types.UID("uid-" + name)
		objs = append(objs, p)
	}
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	first, _ := newTestController(api)
	if err := first.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	list := &karpv1.NodeClaimList{}
	if err := api.List(ctx, list); err != nil || len(list.Items) == 0 {
		t.Fatalf("after the first pass: %d nodeclaims (%v)", len(list.Items), err)
	}
	annotated := map[types.UID]string{}
	for _, nc := range list.Items {
		for _, uid := range strings.Split(nc.Annotations[deps.PlannedPodsAnnotationKey], ",") {
			annotated[types.UID(uid)] = nc.Name
		}
	}
	if diff := cmp.Diff(first.placement.planned, annotated); diff != "" {
		t.Fatalf("planned-pods annotations against the first controller's placement (-placement +annotations):\n%s", diff)
	}
	// The pods pinned by the restarted controller's first pass, from its "computed plan" log line (solved
	// afresh, the same pods may well land on the same NodeClaims: the pins are what shows the restore).
	pinned := -1
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"computed plan"`) {
			if _, after, ok := strings.Cut(args, `"pinned"=`); ok {
				fmt.Sscanf(after, "%d", &pinned)
			}
		}
	}, funcr.Options{Verbosity: 1})
	second, _ := newTestController(api)
	if err := second.Schedule(log.IntoContext(ctx, logger)); err != nil {
		t.Fatal(err)
	}
	if pinned != len(objs)-1 {
		t.Errorf("the restarted controller's first pass pinned %d pods, want %d", pinned, len(objs)-1)
	}
	if diff := cmp.Diff(first.placement.planned, second.placement.planned); diff != "" {
		t.Errorf("placement after the restart (-before +after):\n%s", diff)
	}
	after := &karpv1.NodeClaimList{}
	if err := api.List(ctx, after); err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != len(list.Items) {
		t.Errorf("%d nodeclaims after the restarted controller's pass, want %d", len(after.Items), len(list.Items))
	}
}

// TestNodeClaimLeftEmptyAfterTheLastBinding: the kube-scheduler binds the last pending pod elsewhere than the
// NodeClaim planned for it. No pod is pending any more, yet a pass follows (followUp) and finds the NodeClaim
// surplus, and one surplusGrace later it is deleted rather than left to run empty.
func TestNodeClaimLeftEmptyAfterTheLastBinding(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), pod).Build()
	c, clk := newTestController(api)
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	list := &karpv1.NodeClaimList{}
	if err := api.List(ctx, list); err != nil || len(list.Items) != 1 {
		t.Fatalf("after the first pass: %d nodeclaims (%v), want 1", len(list.Items), err)
	}
	planned := list.Items[0].Name
	c.mu.Lock()
	armed := c.followUpArmed
	c.mu.Unlock()
	if !armed {
		t.Fatal("no pass is due after a pass that planned a pod on a new NodeClaim")
	}
	// The pod lands on another node.
	if err := api.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName = "elsewhere"
	pod.Status.Conditions = nil
	if err := api.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		clk.Step(surplusGrace + time.Second)
		if err := c.Schedule(ctx); err != nil {
			t.Fatal(err)
		}
		nc := &karpv1.NodeClaim{}
		err := api.Get(ctx, client.ObjectKey{Name: planned}, nc)
		gone := client.IgnoreNotFound(err) == nil && (err != nil || !nc.DeletionTimestamp.IsZero())
		if pass == 0 && gone {
			t.Fatalf("nodeclaim %s deleted on the first pass after the binding, before surplusGrace", planned)
		}
		if pass == 1 && !gone {
			t.Fatalf("nodeclaim %s, planned for a pod bound elsewhere, not deleted %s after it became surplus (err %v)", planned, surplusGrace, err)
		}
	}
}

// TestSurplusWaitsForTheSchedulersVerdicts: a NodeClaim launched for a pod bound elsewhere is kept while the
// kube-scheduler has a pod it has not decided about yet (it may still bind that pod there, or find it
// unschedulable and have it planned there), and deleted once that pod is bound too, or after undecidedHold when
// it stays undecided; also in a NodePool that never consolidates (the provisioner's own launch, not a node any pod
// ran on).
func TestSurplusWaitsForTheSchedulersVerdicts(t *testing.T) {
	for _, consolidateAfter := range []string{"", "Never"} {
		t.Run("consolidateAfter="+consolidateAfter, func(t *testing.T) {
			ctx := context.Background()
			scheme, err := test.NewScheme(karpv1.AddToScheme)
			if err != nil {
				t.Fatal(err)
			}
			pool := test.NodePool("default")
			if consolidateAfter != "" {
				pool = pool.ConsolidateAfter(consolidateAfter)
			}
			pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
			pod.UID = "uid-web" // the fake client sets none; the planned-pods annotation names pods by UID
			api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(pool.Obj(), pod).Build()
			c, clk := newTestController(api)
			if err := c.Schedule(ctx); err != nil {
				t.Fatal(err)
			}
			list := &karpv1.NodeClaimList{}
			if err := api.List(ctx, list); err != nil || len(list.Items) != 1 {
				t.Fatalf("after the first pass: %d nodeclaims (%v), want 1", len(list.Items), err)
			}
			planned := list.Items[0].Name
			if list.Items[0].Annotations[deps.PlannedPodsAnnotationKey] != "uid-web" {
				t.Fatalf("nodeclaim %s annotations %v: want %s=uid-web", planned, list.Items[0].Annotations, deps.PlannedPodsAnnotationKey)
			}
			gone := func() bool {
				nc := &karpv1.NodeClaim{}
				err := api.Get(ctx, client.ObjectKey{Name: planned}, nc)
				return client.IgnoreNotFound(err) == nil && (err != nil || !nc.DeletionTimestamp.IsZero())
			}
			// The pod lands elsewhere, and a new pod arrives that the kube-scheduler has not looked at yet.
			if err := api.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				t.Fatal(err)
			}
			pod.Spec.NodeName = "elsewhere"
			pod.Status.Conditions = nil
			if err := api.Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			fresh := test.Pod("fresh").Requests("1", "1Gi").Obj()
			if err := api.Create(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			if c.plans.Surplus(planned) {
				t.Fatalf("nodeclaim %s published as surplus while its pod was still pending", planned)
			}
			for range 3 {
				clk.Step(surplusGrace + time.Second)
				if err := c.Schedule(ctx); err != nil {
					t.Fatal(err)
				}
				if gone() {
					t.Fatalf("nodeclaim %s deleted while the kube-scheduler had a pod to decide about", planned)
				}
				// Kept, but published as surplus: the disruption decision moves no pods onto it.
				if !c.plans.Surplus(planned) {
					t.Fatalf("nodeclaim %s, kept while its pod went elsewhere, not published as surplus", planned)
				}
			}
			// The new pod is bound too: nothing is left to decide, and the NodeClaim goes. In the pool that never
			// consolidates the pod stays undecided instead: the hold is bounded (undecidedHold), and it goes too.
			if consolidateAfter == "" {
				fresh.Spec.NodeName = "elsewhere"
				if err := api.Update(ctx, fresh); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				clk.Step(surplusGrace + time.Second)
				if err := c.Schedule(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if !gone() {
				t.Fatalf("nodeclaim %s, launched for a pod bound elsewhere, not deleted once every pod was bound", planned)
			}
		})
	}
}
