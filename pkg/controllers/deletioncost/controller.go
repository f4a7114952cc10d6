// Package deletioncost writes controller.kubernetes.io/pod-deletion-cost on the pods of Dovetail's nodes in the
// order disruption would take the nodes (Karpenter v1.15's PodDeletionCostManagement gate), so that a ReplicaSet
// scaling down removes first the pods whose nodes are next to go, and those nodes empty sooner.
package deletioncost

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/internal/disruptionview"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs.
const Name = "pod.deletioncost"

// Interval is the time between two passes, as in Karpenter.
const Interval = time.Minute

// Controller ranks the nodes and writes the pods' deletion costs.
type Controller struct{ deps deps.Deps }

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register runs a pass every Interval (on the injected clock) while the manager is leader.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "pod deletion cost pass failed; the next one retries", func(ctx context.Context) error {
		_, err := c.Reconcile(ctx)
		return err
	}))
}

// Result counts a pass's writes by outcome (karpenter_pod_deletion_cost_pod_annotation_writes_total counts
// Updated and Removed as updated). Unchanged are the pods a ReplicaSet controls, on nodes that had writes, that
// already held their planned value.
type Result struct {
	Updated, Removed, Unchanged, Gone, Conflicts, Errors int
}

// Reconcile runs one pass: the disruption controller's view of the cluster, ranked by core.DeletionCosts, each
// write a patch that holds only while the pod is as read (a pod changed meanwhile is left to the next pass).
func (c *Controller) Reconcile(ctx context.Context) (Result, error) {
	ctx = metrics.WithController(ctx, Name)
	var res Result
	v, err := disruptionview.ObserveCached(ctx, c.deps, c.deps.Clock.Now())
	if err != nil {
		return res, fmt.Errorf("observing the cluster: %w", err)
	}
	snap, err := disruptionview.BuildSnapshot(ctx, c.deps, v)
	if err != nil {
		return res, fmt.Errorf("building the disruption snapshot: %w", err)
	}
	writes, err := core.DeletionCosts(snap, core.DeletionCostNodesPerPass)
	if err != nil {
		return res, fmt.Errorf("ranking nodes: %w", err)
	}
	pods := map[string]*corev1.Pod{}
	pools := map[string]string{}
	for _, cand := range snap.Candidates {
		pools[cand.Node] = cand.NodePool
		for _, p := range cand.Pods {
			pods[p.Namespace+"/"+p.Name] = p
		}
	}
	var errs []error
	written := map[string]bool{}
	nodes := map[string]bool{}
	for _, w := range writes {
		written[w.Pod.String()], nodes[w.Node] = true, true
		p := pods[w.Pod.String()]
		if p == nil {
			continue
		}
		updated := p.DeepCopy()
		if w.Remove {
			delete(updated.Annotations, corev1.PodDeletionCost)
		} else {
			if updated.Annotations == nil {
				updated.Annotations = map[string]string{}
			}
			updated.Annotations[corev1.PodDeletionCost] = strconv.Itoa(int(w.Value))
		}
		err := c.deps.Client.Patch(ctx, updated, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsNotFound(err):
			res.Gone++
		case apierrors.IsConflict(err):
			res.Conflicts++
		case err != nil:
			res.Errors++
			errs = append(errs, fmt.Errorf("patching pod %s: %w", w.Pod, err))
		case w.Remove:
			res.Removed++
		default:
			res.Updated++
		}
	}
	// As Karpenter counts them: the pods a ReplicaSet controls on a node that had writes, already as planned.
	perPool := map[string]int{}
	for _, cand := range snap.Candidates {
		if !nodes[cand.Node] {
			continue
		}
		perPool[pools[cand.Node]]++
		for _, p := range cand.Pods {
			if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "ReplicaSet" && !written[p.Namespace+"/"+p.Name] {
				res.Unchanged++
			}
		}
	}
	if c.deps.Metrics != nil {
		c.deps.Metrics.RecordDeletionCostPass(perPool, map[string]int{
			metrics.DeletionCostUpdated: res.Updated + res.Removed, metrics.DeletionCostUnchanged: res.Unchanged,
			metrics.DeletionCostNotFound: res.Gone, metrics.DeletionCostConflict: res.Conflicts, metrics.DeletionCostError: res.Errors,
		})
	}
	if res.Updated+res.Removed > 0 {
		log.FromContext(ctx).V(1).Info("wrote pod deletion costs", "updated", res.Updated, "removed", res.Removed, "gone", res.Gone, "conflicts", res.Conflicts)
	}
	return res, errors.Join(errs...)
}
