package termination_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// A drain pass that finds every eviction slot taken (by evictions in flight on other nodes) returns at once and
// asks to be run again within EvictionSlotWait, leaving the pod in place; it is not a refusal (no backoff, no
// event, no eviction request), so the pod is evicted on the first pass after a slot frees up.
func TestEvictionSlotsTakenRetriesThePodLater(t *testing.T) {
	h := newHarness(t)
	h.launch(nil)
	h.pod(test.DrainPod("web").ReplicaSet("web"))
	h.deleteClaim()
	h.reconcileClaim()

	release := h.nodes.TakeEvictionSlots()
	// A pass that waited for a slot instead would hold its worker until this deadline and fail.
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	res, err := h.nodes.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: h.prefix + "node"}})
	if err != nil {
		release()
		t.Fatalf("pass with every eviction slot taken: %v", err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > nodetermination.EvictionSlotWait {
		t.Errorf("RequeueAfter = %v, want within (0, %v] so the pod is tried again soon", res.RequeueAfter, nodetermination.EvictionSlotWait)
	}
	if p := h.getPod("web"); p == nil || p.DeletionTimestamp != nil {
		t.Errorf("pod web evicted although no eviction slot was free")
	}
	if got := testutil.CollectAndCount(h.metrics.PodsEvictionRequests); got != 0 {
		t.Errorf("karpenter_pods_eviction_requests_total has %d series, want none: no eviction may be requested without a slot", got)
	}
	if h.hasEvent("EvictionBlocked") || h.hasEvent("EvictionFailed") {
		t.Errorf("a full set of eviction slots was reported as a refused eviction; events: %v", h.events)
	}
	c := condition(h.getClaim(), termination.ConditionTypeDrained)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, h.ns+"/web") {
		t.Errorf("Drained condition = %+v, want False naming %s/web", c, h.ns)
	}
	if len(h.cloud.Deleted()) != 0 {
		t.Errorf("instance terminated while pod web was still on the node")
	}

	// A slot frees up: the next pass evicts the pod straight away, with no backoff to wait out.
	release()
	h.reconcileNode()
	if h.getPod("web") != nil {
		t.Errorf("pod web not evicted on the first pass after a slot freed up")
	}
	if got := testutil.ToFloat64(h.metrics.PodsEvictionRequests.WithLabelValues("200")); got != 1 {
		t.Errorf("karpenter_pods_eviction_requests_total{code=200} = %v, want 1", got)
	}
	// The NodeClaim was deleted without a disruption: a forceful termination.
	if got := testutil.ToFloat64(h.metrics.PodsDrained.WithLabelValues("Forceful Termination")); got != 1 {
		t.Errorf("karpenter_pods_drained_total{reason=Forceful Termination} = %v, want 1", got)
	}
	h.settle(5)
}
