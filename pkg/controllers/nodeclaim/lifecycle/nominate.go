package lifecycle

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// nominateWorkers bounds the pod status writes one registration makes at once.
const nominateWorkers = 8

// nominatePlanned sets status.nominatedNodeName to the Node's name on the pending pods the provisioner planned
// on the NodeClaim, before registration lifts the taint that keeps the kube-scheduler off the Node: the
// scheduler then keeps the Node's room for them instead of filling it with other pods (KEP-5278). Pods bound
// already, pods nominated elsewhere by someone else and pods that no longer exist are skipped, and so are pods
// of a zone spread the kube-scheduler would count against the others nominated here
// (scheduling.NominationsOnOneNode); none is nominated when the nomination budget is spent
// (deps.NominationBudget) and the Node carries no nomination of ours yet; failures are
// logged and do not hold registration up (the provisioner's next pass nominates again).
// It returns how many pods it nominated. reader reads the pods (the cache, or the API server where a nomination
// cleared a moment ago must be seen).
func (c *Controller) nominatePlanned(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, reader client.Reader) int {
	plans := c.deps.Plans
	if plans == nil {
		return 0
	}
	refs := plans.Planned(nc.Name)
	if len(refs) == 0 {
		log.FromContext(ctx).V(1).Info("no pods planned on the registering nodeclaim", "node", node.Name)
		return 0
	}
	if !plans.MayNominateOn(node.Name) {
		// As many nodes as the kube-scheduler can afford carry nominations already (deps.NominationBudget):
		// the pods go where the kube-scheduler puts them, or are nominated here by a later pass.
		log.FromContext(ctx).V(1).Info("planned pods not nominated at registration: the nomination budget is spent", "node", node.Name,
			"planned", len(refs), "budget", plans.NominationBudget())
		return 0
	}
	ours := plans.Nominated()
	var mu sync.Mutex
	update := map[types.UID]string{}
	skipped := map[string]int{}
	skip := func(reason string) {
		mu.Lock()
		skipped[reason]++
		mu.Unlock()
	}
	// Read the planned pods, then choose which of them may be nominated here (scheduling.NominationsOnOneNode:
	// the ones nominated here already first), then write.
	pods := make([]*corev1.Pod, len(refs))
	workqueue.ParallelizeUntil(ctx, nominateWorkers, len(refs), func(i int) {
		r := refs[i]
		pod := &corev1.Pod{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, pod); err != nil {
			skip("gone")
			return
		}
		cur := pod.Status.NominatedNodeName
		switch {
		case pod.UID != r.UID:
			skip("gone")
			return
		case pod.Spec.NodeName != "":
			skip("bound")
			return
		case cur != "" && cur != node.Name && cur != ours[pod.UID]:
			skip("nominated-by-others")
			return
		}
		pods[i] = pod
	})
	var here, rest []*corev1.Pod
	for _, pod := range pods {
		switch {
		case pod == nil:
		case pod.Status.NominatedNodeName == node.Name:
			here = append(here, pod)
		default:
			rest = append(rest, pod)
		}
	}
	candidates := append(here, rest...)
	var write []*corev1.Pod
	for i, ok := range scheduling.NominationsOnOneNode(candidates) {
		switch {
		case i < len(here):
			skip("nominated-already")
		case !ok:
			skip("spread-on-this-node")
		default:
			write = append(write, candidates[i])
		}
	}
	workqueue.ParallelizeUntil(ctx, nominateWorkers, len(write), func(i int) {
		pod := write[i]
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Status.NominatedNodeName = node.Name
		if err := c.deps.Client.Status().Patch(ctx, pod, patch); err != nil {
			log.FromContext(ctx).V(1).Info("could not nominate pod for its planned node", "pod", pod.Namespace+"/"+pod.Name,
				"node", node.Name, "error", err.Error())
			return
		}
		mu.Lock()
		update[pod.UID] = node.Name
		mu.Unlock()
	})
	plans.UpdateNominated(update)
	if len(skipped) > 0 {
		log.FromContext(ctx).V(1).Info("planned pods not nominated at registration", "node", node.Name, "planned", len(refs), "skipped", skipped)
	}
	return len(update)
}
