package termination_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail/dovetail/pkg/metrics"
	pureterm "github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// env is shared by this package's tests; each test uses its own object names.
var env *test.Env

func TestMain(m *testing.M) {
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if env, err = test.NewEnv(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

type fixture struct {
	t        *testing.T
	ctx      context.Context
	cloud    *fake.CloudProvider
	recorder *record.FakeRecorder
	metrics  *metrics.Metrics
	ctrl     *termination.Controller
	suffix   string
	clock    *clocktesting.FakeClock
}

var serial atomic.Int64

func newFixture(t *testing.T) *fixture {
	clk := clocktesting.NewFakeClock(time.Now())
	f := &fixture{t: t, ctx: context.Background(), cloud: fake.New(clk), recorder: record.NewFakeRecorder(1000), metrics: metrics.NewForTest(),
		suffix: fmt.Sprintf("-%d", serial.Add(1)), clock: clk}
	f.ctrl = termination.NewController(deps.Deps{Client: env.Client, CloudProvider: f.cloud, Clock: clk, Recorder: f.recorder, Metrics: f.metrics})
	return f
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// claim creates a NodeClaim; launched gives it a live fake instance.
// Names and provider IDs get a per-fixture suffix, so tests (and -count=N runs) sharing the API server never
// see each other's objects.
func (f *fixture) claim(name string, tgp *time.Duration, launched bool, annotations map[string]string) *karpv1.NodeClaim {
	f.t.Helper()
	nc := test.TerminationNodeClaim(name+f.suffix, "pool-a", tgp)
	nc.Annotations = annotations
	f.must(env.Client.Create(f.ctx, nc))
	if launched {
		nc.Status.ProviderID = fake.ProviderIDPrefix + fake.Zones[0] + "/i-" + nc.Name
		nc.Status.ProviderID = f.cloud.AddInstance(nc)
		f.must(env.Client.Status().Update(f.ctx, nc))
	}
	f.must(env.Client.Delete(f.ctx, nc))
	return nc
}

func (f *fixture) reconcile(name string) reconcile.Result {
	f.t.Helper()
	res, err := f.ctrl.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (f *fixture) get(name string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	if err := env.Client.Get(f.ctx, types.NamespacedName{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return nc
}

func (f *fixture) events() string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// A NodeClaim whose instance never registered a Node: the instance is terminated, then the finalizer goes.
func TestUnregisteredClaimTerminatesInstance(t *testing.T) {
	f := newFixture(t)
	nc := f.claim("unregistered", nil, true, nil)
	if res := f.reconcile(nc.Name); res.RequeueAfter == 0 {
		t.Errorf("no requeue while the instance terminates")
	}
	got := f.get(nc.Name)
	if got == nil {
		t.Fatalf("finalizer removed before the cloud confirmed the instance is gone")
	}
	if c := got.GetCondition(karpv1.ConditionTypeInstanceTerminating); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("InstanceTerminating = %+v, want True", c)
	}
	f.reconcile(nc.Name)
	if f.get(nc.Name) != nil {
		t.Errorf("nodeclaim still present after its instance is gone")
	}
	if d := f.cloud.Deleted(); !slices.Equal(d, []string{got.Status.ProviderID}) {
		t.Errorf("terminated %v, want [%s]", d, got.Status.ProviderID)
	}
	if v := testutil.ToFloat64(f.metrics.NodeClaimsTerminated); v != 1 {
		t.Errorf("karpenter_nodeclaims_terminated_total = %v, want 1", v)
	}
}

// A NodeClaim that was never launched has nothing to terminate.
func TestUnlaunchedClaimIsReleased(t *testing.T) {
	f := newFixture(t)
	nc := f.claim("unlaunched", nil, false, nil)
	f.reconcile(nc.Name)
	if f.get(nc.Name) != nil {
		t.Errorf("unlaunched nodeclaim still present")
	}
	if len(f.cloud.Deleted()) != 0 {
		t.Errorf("terminated instances for an unlaunched nodeclaim: %v", f.cloud.Deleted())
	}
}

// A NodeClaim with a Node: the Node is deleted and the instance is left to the Node's termination; only once the
// Node is gone is the instance terminated and the finalizer removed.
func TestClaimWaitsForItsNode(t *testing.T) {
	f := newFixture(t)
	nc := f.claim("registered", nil, true, nil)
	nc = f.get(nc.Name)
	node := test.TerminationNode(nc.Name+"-node", nc.Status.ProviderID, "pool-a")
	f.must(env.Client.Create(f.ctx, node))
	f.reconcile(nc.Name)
	f.reconcile(nc.Name)
	stored := &corev1.Node{}
	f.must(env.Client.Get(f.ctx, client.ObjectKeyFromObject(node), stored))
	if stored.DeletionTimestamp == nil {
		t.Fatalf("node of a deleted nodeclaim not deleted")
	}
	if f.get(nc.Name) == nil || len(f.cloud.Deleted()) != 0 {
		t.Fatalf("nodeclaim released or instance terminated while its node still exists")
	}
	if !strings.Contains(f.events(), "DeletingNode") {
		t.Errorf("no DeletingNode event")
	}
	// The node termination controller would release the node; do it by hand.
	stored.Finalizers = nil
	f.must(env.Client.Update(f.ctx, stored))
	for i := 0; i < 3 && f.get(nc.Name) != nil; i++ {
		f.reconcile(nc.Name)
	}
	if f.get(nc.Name) != nil {
		t.Errorf("nodeclaim still present after its node went")
	}
}

// The termination timestamp annotation is deletion time plus terminationGracePeriod; a malformed one is
// replaced, with a warning event.
func TestTerminationTimestampAnnotation(t *testing.T) {
	f := newFixture(t)
	tgp := 90 * time.Second
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantEvent   bool
	}{
		{"tgp-fresh", nil, false},
		{"tgp-malformed", map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: "soon"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := f.claim(tc.name, &tgp, true, tc.annotations)
			f.reconcile(nc.Name)
			got := f.get(nc.Name)
			want := pureterm.FormatDeadline(got.DeletionTimestamp.Add(tgp))
			if v := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; v != want {
				t.Errorf("annotation = %q, want %q", v, want)
			}
			if has := strings.Contains(f.events(), "InvalidTerminationTimestamp"); has != tc.wantEvent {
				t.Errorf("InvalidTerminationTimestamp event = %v, want %v", has, tc.wantEvent)
			}
		})
	}
}

// Register refuses to run without its dependencies.
func TestRegisterNeedsMetrics(t *testing.T) {
	c := termination.NewController(deps.Deps{Client: env.Client, CloudProvider: fake.New(clocktesting.NewFakeClock(time.Now())),
		Clock: clocktesting.NewFakeClock(time.Now()), Recorder: record.NewFakeRecorder(1)})
	if err := c.Register(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Errorf("Register without metrics = %v, want an error naming metrics", err)
	}
}
