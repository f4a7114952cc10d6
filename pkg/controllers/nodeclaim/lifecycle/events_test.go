package lifecycle

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// newRecordingHarness is newHarness with a recorder that keeps the object of each event.
func newRecordingHarness(t *testing.T) (*harness, *test.Recorder) {
	h := newHarness(t)
	rec := test.NewRecorder()
	d := h.env.Deps
	d.Recorder = rec
	h.c = NewController(d)
	return h, rec
}

func TestLifecycleEvents(t *testing.T) {
	h, rec := newRecordingHarness(t)
	t.Run("insufficient capacity is told to the nodeclaim and its waiting pods", func(t *testing.T) {
		waiting, bound := test.Pod("ice-waiting").Obj(), test.Pod("ice-bound").NodeName("elsewhere").Obj()
		h.create(waiting)
		h.create(bound)
		h.env.Deps.Plans.SetPlanned(map[string][]deps.PodRef{"ice": {
			{Namespace: waiting.Namespace, Name: waiting.Name, UID: waiting.UID},
			{Namespace: bound.Namespace, Name: bound.Name, UID: bound.UID},
		}})
		h.env.Cloud.InjectError("Create", cloudprovider.NewInsufficientCapacityError(errors.New("no capacity for fake-small")))
		h.create(test.NodeClaim("ice", "default").Obj())
		h.reconcileUntil("ice", func(nc *karpv1.NodeClaim) (bool, string) { return !nc.DeletionTimestamp.IsZero(), "not deleted" })
		var got []string
		for _, e := range rec.WithReason("InsufficientCapacityError") {
			if e.Type != corev1.EventTypeWarning {
				t.Errorf("event %+v is not a Warning", e)
			}
			got = append(got, e.Kind+"/"+e.Name)
		}
		if len(got) != 2 || got[0] != "NodeClaim/ice" || got[1] != "Pod/ice-waiting" {
			t.Errorf("InsufficientCapacityError on %v, want [NodeClaim/ice Pod/ice-waiting]", got)
		}
	})
	t.Run("node class not ready", func(t *testing.T) {
		h.env.Cloud.InjectError("Create", cloudprovider.NewNodeClassNotReadyError(errors.New("EC2NodeClass default has no subnets")))
		h.create(test.NodeClaim("unready", "default").Obj())
		h.reconcileUntil("unready", conditionIs(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, karpv1.ReasonNodeClassNotReady,
			"node class not ready: EC2NodeClass default has no subnets"))
		evs := rec.WithReason("NodeClassNotReady")
		if len(evs) == 0 || evs[0].Kind != "NodeClaim" || evs[0].Name != "unready" || evs[0].Type != corev1.EventTypeWarning {
			t.Errorf("NodeClassNotReady events %+v, want a Warning on NodeClaim unready", evs)
		}
	})
	for _, tc := range []struct {
		name    string
		tainted bool
	}{{"node without the unregistered taint", false}, {"node with the unregistered taint", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			name := "taint-" + map[bool]string{true: "kept", false: "missing"}[tc.tainted]
			h.create(test.NodeClaim(name, "default").Obj())
			nc := h.reconcileUntil(name, func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeLaunched) })
			node := test.Node(name+"-node", nc.Status.ProviderID)
			if tc.tainted {
				node = node.Taint(karpv1.UnregisteredNoExecuteTaint())
			}
			h.create(node.Obj())
			h.reconcileUntil(name, func(nc *karpv1.NodeClaim) (bool, string) { return condition(nc, karpv1.ConditionTypeRegistered) })
			evs := rec.WithReason("UnregisteredTaintMissing")
			if tc.tainted {
				if len(evs) != 0 {
					t.Errorf("UnregisteredTaintMissing for a node with the taint: %+v", evs)
				}
				return
			}
			if len(evs) != 1 || evs[0].Kind != "NodeClaim" || evs[0].Name != name || evs[0].Type != corev1.EventTypeWarning {
				t.Errorf("UnregisteredTaintMissing events %+v, want one Warning on NodeClaim %s", evs, name)
			}
		})
	}
}
