package disruption_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

func rsPod(name string, annotations ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i := 0; i+1 < len(annotations); i += 2 {
		p.Annotations[annotations[i]] = annotations[i+1]
	}
	return p
}

// TestDeletionCosts checks the pod-deletion-cost ranking of PodDeletionCostManagement: nodes being deleted get
// MinInt32, rankable nodes -n..-1 (drifted first, then price over the pods' moving cost, highest first, within
// their NodePool's budget), the others lose the annotation; only ReplicaSet pods are written, and only when their
// value changes.
func TestDeletionCosts(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	pool := test.NodePool("default").Obj()
	limited := test.NodePool("limited").Obj()
	limited.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	never := test.NodePool("never").Obj()
	never.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
	cand := func(name, np string, price float64, pods ...*corev1.Pod) *disruption.Candidate {
		return &disruption.Candidate{NodeClaim: name, Node: name, NodePool: np, Price: price, Pods: pods, Initialized: true, Consolidatable: true, CreatedAt: now}
	}
	job := rsPod("job-1")
	job.OwnerReferences[0].Kind, job.OwnerReferences[0].APIVersion = "Job", "batch/v1"
	bare := rsPod("bare-1")
	bare.OwnerReferences = nil
	deleting := cand("deleting", "default", 1, rsPod("del-1"), rsPod("del-2", corev1.PodDeletionCost, "-2147483648"))
	deleting.Deleting = true
	drifted := cand("drifted", "default", 0.1, rsPod("drift-1"))
	drifted.Drifted = "NodeClassDrift"
	snap := &disruption.Snapshot{Now: now, Cluster: &scheduling.Snapshot{},
		NodePools:  map[string]*karpv1.NodePool{"default": pool, "limited": limited, "never": never},
		NodeCounts: map[string]int{"default": 6, "limited": 2, "never": 1}, Disrupting: map[string]int{},
		Candidates: []*disruption.Candidate{
			deleting,
			drifted,
			cand("cheap-to-move", "default", 1, rsPod("cheap-1", karpv1.DisruptionCostAnnotationKey, "-1000000000"), rsPod("cheap-2", karpv1.DisruptionCostAnnotationKey, "-1000000000")),
			cand("costly-to-move", "default", 1, rsPod("costly-1", karpv1.DisruptionCostAnnotationKey, "1000000000"), job),
			cand("unchanged", "default", 0.5, rsPod("same-1", corev1.PodDeletionCost, "-2")),
			cand("pinned", "default", 2, rsPod("pin-1", corev1.PodDeletionCost, "-3"), bare),
			cand("limited-a", "limited", 2, rsPod("la-1")),
			cand("limited-b", "limited", 1, rsPod("lb-1", corev1.PodDeletionCost, "7")),
			cand("never", "never", 1, rsPod("never-1", corev1.PodDeletionCost, "-9")),
		}}
	w := func(node, pod string, v int32) disruption.DeletionCostWrite {
		return disruption.DeletionCostWrite{Pod: types.NamespacedName{Namespace: "default", Name: pod}, Node: node, Value: v}
	}
	rm := func(node, pod string) disruption.DeletionCostWrite {
		return disruption.DeletionCostWrite{Pod: types.NamespacedName{Namespace: "default", Name: pod}, Node: node, Remove: true}
	}
	// Ranked: drifted (-5), then by price over moving cost: cheap-to-move 1/1 (-4), limited-a 2/2 (-3; limited-b,
	// 1/2, is past its NodePool's budget of 1 and cleared), unchanged 0.5/2 (-2, already written), costly-to-move
	// 1/(1+8.45+1) (-1). pinned holds a pod without a controller, never a NodePool that does not consolidate.
	want := []disruption.DeletionCostWrite{
		w("cheap-to-move", "cheap-1", -4), w("cheap-to-move", "cheap-2", -4),
		w("costly-to-move", "costly-1", -1),
		w("deleting", "del-1", math.MinInt32),
		w("drifted", "drift-1", -5),
		w("limited-a", "la-1", -3),
		rm("limited-b", "lb-1"),
		rm("never", "never-1"),
		rm("pinned", "pin-1"),
	}
	got, err := disruption.DeletionCosts(snap, disruption.DeletionCostNodesPerPass)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}

	// The cap counts ranked and cleared nodes with writes; the pods of nodes being deleted are always written.
	got, err = disruption.DeletionCosts(snap, 2)
	if err != nil {
		t.Fatal(err)
	}
	want = []disruption.DeletionCostWrite{
		w("cheap-to-move", "cheap-1", -4), w("cheap-to-move", "cheap-2", -4),
		w("deleting", "del-1", math.MinInt32),
		w("drifted", "drift-1", -5),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("capped writes (-want +got):\n%s", d)
	}
}
