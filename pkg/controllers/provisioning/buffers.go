package provisioning

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
)

// afterPlan returns the input with the room the plan gives its pods taken: each pod planned on a registered Node
// is added to that Node's pods, and the requests of each pod planned on an in-flight NodeClaim without a Node
// come off its room; NodeClaims the plan creates count in their NodePool's usage (nodes and requests). The
// virtual pods of CapacityBuffers are placed on what remains, so they never take room from a real pod.
func afterPlan(in solver.Input, plan solver.Plan) solver.Input {
	out := in
	out.Pods = nil
	out.Pinned = nil
	nodeIdx := map[string]int{}
	out.Nodes = make([]solver.ExistingNode, len(in.Nodes))
	for i, n := range in.Nodes {
		n.Pods = append([]*corev1.Pod(nil), n.Pods...)
		out.Nodes[i] = n
		nodeIdx[n.Node.Name] = i
	}
	claimIdx := map[string]int{}
	out.InFlight = make([]solver.InFlightClaim, len(in.InFlight))
	for i, f := range in.InFlight {
		f.Available = f.Available.DeepCopy()
		out.InFlight[i] = f
		claimIdx[f.NodeClaim.Name] = i
	}
	for _, p := range in.Pods {
		name, ok := plan.Existing[solver.PodKey(p)]
		if !ok {
			continue
		}
		if i, ok := claimIdx[name]; ok {
			if node := out.InFlight[i].NodeClaim.Status.NodeName; node != "" {
				if _, registered := nodeIdx[node]; registered {
					name = node
				}
			}
		}
		if i, ok := nodeIdx[name]; ok {
			bound := p.DeepCopy()
			bound.Spec.NodeName = name
			out.Nodes[i].Pods = append(out.Nodes[i].Pods, bound)
			continue
		}
		if i, ok := claimIdx[name]; ok {
			out.InFlight[i].Available = solver.Subtract(out.InFlight[i].Available, solver.PodRequests(p))
		}
	}
	if len(plan.NewNodeClaims) > 0 {
		added := map[string]corev1.ResourceList{}
		for _, nn := range plan.NewNodeClaims {
			if added[nn.NodePool.Name] == nil {
				added[nn.NodePool.Name] = corev1.ResourceList{}
			}
			solver.Add(added[nn.NodePool.Name], nn.Requests)
			solver.Add(added[nn.NodePool.Name], corev1.ResourceList{solver.ResourceNodes: resource.MustParse("1")})
		}
		out.NodePools = make([]solver.NodePoolOption, len(in.NodePools))
		for i, o := range in.NodePools {
			if a := added[o.NodePool.Name]; a != nil {
				o.Usage = solver.Sum(o.Usage, a)
			}
			out.NodePools[i] = o
		}
	}
	return out
}

// bufferPlacements counts, per buffer (namespace/name), where a plan put its virtual pods.
func bufferPlacements(virtual []*corev1.Pod, plan solver.Plan) map[string]*capacitybuffer.Placement {
	out := map[string]*capacitybuffer.Placement{}
	at := func(p *corev1.Pod) *capacitybuffer.Placement {
		k := capacitybuffer.BufferKey(p)
		if out[k] == nil {
			out[k] = &capacitybuffer.Placement{}
		}
		return out[k]
	}
	for _, p := range virtual {
		key := solver.PodKey(p)
		if _, ok := plan.Existing[key]; ok {
			at(p).Existing++
		} else if reason, ok := plan.Unschedulable[key]; ok {
			pl := at(p)
			pl.Failed++
			if pl.FailedReason == "" {
				pl.FailedReason = reason
			}
		}
	}
	for _, nn := range plan.NewNodeClaims {
		for _, p := range nn.Pods {
			if capacitybuffer.IsVirtual(p) {
				at(p).New++
			}
		}
	}
	return out
}

// bufferRoom maps each Node (or NodeClaim without a registered Node) to the virtual pods the plan keeps room for
// there, for consolidation.
func bufferRoom(in solver.Input, virtual []*corev1.Pod, plan solver.Plan) map[string][]*corev1.Pod {
	claimNode := map[string]string{}
	for _, f := range in.InFlight {
		claimNode[f.NodeClaim.Name] = f.NodeClaim.Status.NodeName
	}
	out := map[string][]*corev1.Pod{}
	for _, p := range virtual {
		name, ok := plan.Existing[solver.PodKey(p)]
		if !ok {
			continue
		}
		if n := claimNode[name]; n != "" {
			name = n
		}
		placed := p.DeepCopy()
		placed.Spec.NodeName = name
		out[name] = append(out[name], placed)
	}
	return out
}

// updateBufferStatus writes each CapacityBuffer's Provisioning condition from the pass's placements (only when it
// changes).
func (c *Controller) updateBufferStatus(ctx context.Context, placed map[string]*capacitybuffer.Placement) error {
	list := &autoscalingv1beta1.CapacityBufferList{}
	if err := c.deps.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing capacitybuffers: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	now := metav1.NewTime(c.deps.Clock.Now())
	var errs []error
	for i := range list.Items {
		cb := &list.Items[i]
		var p capacitybuffer.Placement
		if pl := placed[cb.Namespace+"/"+cb.Name]; pl != nil {
			p = *pl
		}
		cond, ok := capacitybuffer.Provisioning(cb, p)
		if !ok {
			continue
		}
		st, changed := capacitybuffer.SetProvisioning(cb, cond, now)
		if !changed {
			continue
		}
		stored := cb.DeepCopy()
		cb.Status = st
		if err := c.deps.Client.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			// A conflict means the buffer controller wrote first; the next pass writes again.
			errs = append(errs, fmt.Errorf("patching capacitybuffer %s/%s status: %w", cb.Namespace, cb.Name, err))
			continue
		}
		log.FromContext(ctx).V(1).Info("capacitybuffer provisioning", "capacitybuffer", cb.Namespace+"/"+cb.Name,
			"status", cond.Status, "reason", cond.Reason, "message", cond.Message)
	}
	if len(errs) > 0 {
		log.FromContext(ctx).V(1).Info("capacitybuffer status not written this pass", "errors", len(errs), "error", errs[0].Error())
	}
	return nil
}
