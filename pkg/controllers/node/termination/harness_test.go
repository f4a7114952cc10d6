package termination_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
	nodeclaimtermination "github.com/dovetail/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

// env is the API server shared by the tests of this package; every test works in its own namespace and with
// its own node and NodeClaim names, so tests do not see each other's objects.
var env *test.Env

func TestMain(m *testing.M) {
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env, err = test.NewEnv(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The controller lists a node's VolumeAttachments by an index only its cache serves.
	env.Client = test.CacheIndexedClient(env.Client)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

var serial atomic.Int64

// harness drives both termination controllers by hand, with a fake clock and a fake cloud provider.
type harness struct {
	t        *testing.T
	ctx      context.Context
	c        client.Client
	cs       kubernetes.Interface
	clock    *clocktesting.FakeClock
	cloud    *fake.CloudProvider
	recorder *record.FakeRecorder
	metrics  *metrics.Metrics
	events   []string
	nodes    *nodetermination.Controller
	claims   *nodeclaimtermination.Controller
	ns       string
	prefix   string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	n := serial.Add(1)
	h := &harness{
		t:        t,
		ctx:      context.Background(),
		c:        env.Client,
		cs:       cs,
		clock:    clocktesting.NewFakeClock(time.Now()),
		recorder: record.NewFakeRecorder(10000),
		ns:       fmt.Sprintf("term-%d", n),
		prefix:   fmt.Sprintf("t%d-", n),
	}
	h.cloud = fake.New(h.clock)
	h.metrics = metrics.NewForTest()
	d := deps.Deps{Client: env.Client, KubeClient: cs, CloudProvider: h.cloud, Clock: h.clock, Recorder: h.recorder, Metrics: h.metrics}
	h.nodes = nodetermination.NewController(d)
	h.claims = nodeclaimtermination.NewController(d)
	h.must(h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	return h
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// launch creates a NodeClaim with a live fake instance and its registered Node.
func (h *harness) launch(tgp *time.Duration) (*karpv1.NodeClaim, *corev1.Node) {
	h.t.Helper()
	nc := test.TerminationNodeClaim(h.prefix+"claim", "default", tgp)
	h.must(h.c.Create(h.ctx, nc))
	// Provider IDs unique across tests sharing the API server (each harness has its own fake cloud).
	nc.Status.ProviderID = fmt.Sprintf("%s%s/i-%s", fake.ProviderIDPrefix, fake.Zones[0], strings.TrimSuffix(h.prefix, "-"))
	providerID := h.cloud.AddInstance(nc)
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = h.prefix + "node"
	h.must(h.c.Status().Update(h.ctx, nc))
	node := test.TerminationNode(h.prefix+"node", providerID, "default")
	h.must(h.c.Create(h.ctx, node))
	return nc, node
}

// pod creates a pod on the harness's node and marks it running.
func (h *harness) pod(w *test.DrainPodWrapper) *corev1.Pod {
	h.t.Helper()
	p := w.Namespace(h.ns).Node(h.prefix + "node").NoUID().Obj()
	no := false
	p.Spec.AutomountServiceAccountToken = &no
	status := p.Status
	created, err := h.cs.CoreV1().Pods(h.ns).Create(h.ctx, p, metav1.CreateOptions{})
	h.must(err)
	created.Status = status
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	updated, err := h.cs.CoreV1().Pods(h.ns).UpdateStatus(h.ctx, created, metav1.UpdateOptions{})
	h.must(err)
	return updated
}

// pdb creates a budget selecting app=<app> and publishes a status allowing `allowed` disruptions, as the
// disruption controller (absent from envtest) would.
func (h *harness) pdb(name, app string, allowed int32) {
	h.t.Helper()
	created, err := h.cs.PolicyV1().PodDisruptionBudgets(h.ns).Create(h.ctx, test.PDBFor(h.ns, name, app), metav1.CreateOptions{})
	h.must(err)
	h.setPDBAllowed(created, allowed)
}

func (h *harness) setPDBAllowed(pdb *policyv1.PodDisruptionBudget, allowed int32) {
	h.t.Helper()
	pdb, err := h.cs.PolicyV1().PodDisruptionBudgets(h.ns).Get(h.ctx, pdb.Name, metav1.GetOptions{})
	h.must(err)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     1,
		DesiredHealthy:     1,
		ExpectedPods:       1,
	}
	_, err = h.cs.PolicyV1().PodDisruptionBudgets(h.ns).UpdateStatus(h.ctx, pdb, metav1.UpdateOptions{})
	h.must(err)
}

func (h *harness) reconcileNode() reconcile.Result {
	h.t.Helper()
	res, err := h.nodes.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: h.prefix + "node"}})
	if err != nil {
		h.t.Fatalf("node reconcile: %v", err)
	}
	return res
}

func (h *harness) reconcileClaim() reconcile.Result {
	h.t.Helper()
	res, err := h.claims.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: h.prefix + "claim"}})
	if err != nil {
		h.t.Fatalf("nodeclaim reconcile: %v", err)
	}
	return res
}

// settle runs both controllers until the NodeClaim and Node are gone, or fails after max rounds.
func (h *harness) settle(max int) {
	h.t.Helper()
	for i := 0; i < max; i++ {
		h.reconcileClaim()
		h.reconcileNode()
		if h.getNode() == nil && h.getClaim() == nil {
			return
		}
	}
	h.t.Fatalf("node and nodeclaim still present after %d rounds: node=%v claim=%v", max, h.getNode() != nil, h.getClaim() != nil)
}

func (h *harness) getNode() *corev1.Node {
	n := &corev1.Node{}
	if err := h.c.Get(h.ctx, types.NamespacedName{Name: h.prefix + "node"}, n); err != nil {
		if !apierrors.IsNotFound(err) {
			h.t.Fatal(err)
		}
		return nil
	}
	return n
}

func (h *harness) getClaim() *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	if err := h.c.Get(h.ctx, types.NamespacedName{Name: h.prefix + "claim"}, nc); err != nil {
		if !apierrors.IsNotFound(err) {
			h.t.Fatal(err)
		}
		return nil
	}
	return nc
}

// getPod returns the pod, or nil once it is gone.
func (h *harness) getPod(name string) *corev1.Pod {
	p, err := h.cs.CoreV1().Pods(h.ns).Get(h.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	h.must(err)
	return p
}

func (h *harness) deleteClaim() {
	h.t.Helper()
	h.must(h.c.Delete(h.ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: h.prefix + "claim"}}))
}

// collect moves recorded events into h.events.
func (h *harness) collect() {
	for {
		select {
		case e := <-h.recorder.Events:
			h.events = append(h.events, e)
		default:
			return
		}
	}
}

// hasEvent reports whether an event containing every one of the parts was recorded.
func (h *harness) hasEvent(parts ...string) bool {
	h.collect()
	for _, e := range h.events {
		all := true
		for _, p := range parts {
			if !strings.Contains(e, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func condition(nc *karpv1.NodeClaim, t string) *metav1.Condition {
	if nc == nil {
		return nil
	}
	return nc.GetCondition(t)
}
