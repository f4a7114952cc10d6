package deps

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/operator/index"
)

// CountDisrupted counts the NodeClaim, just deleted for reason (a metric reason: drifted, expired, ...), in
// karpenter_nodeclaims_disrupted_total, and the pods bound to its Node that will have to run elsewhere in
// karpenter_pods_disruption_initiated_total. policy is the NodePool's consolidationPolicy for a consolidation
// (metrics.ConsolidationPolicyLabel), "" otherwise. The pods are read from the cache's node-name index; a failed
// list is logged and counts no pod (the NodeClaim is counted all the same).
func CountDisrupted(ctx context.Context, d Deps, nc *karpv1.NodeClaim, reason, policy string) {
	if d.Metrics == nil {
		return
	}
	pods := 0
	if nc.Status.NodeName != "" {
		list := &corev1.PodList{}
		if err := d.Client.List(ctx, list, client.MatchingFields{index.PodNodeName: nc.Status.NodeName}); err != nil {
			log.FromContext(ctx).V(1).Info("listing the disrupted node's pods for karpenter_pods_disruption_initiated_total",
				"nodeclaim", nc.Name, "node", nc.Status.NodeName, "error", err.Error())
		}
		for i := range list.Items {
			if disruption.Reschedulable(&list.Items[i]) {
				pods++
			}
		}
	}
	d.Metrics.CountDisrupted(nc, reason, policy, pods)
}
