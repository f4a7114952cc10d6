package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/internal/clusterinput"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
)

// snapshot gathers pending pods, usable NodePools with their instance types and usage, and the NodeClaims of
// those NodePools with the room they have left. Without pending pods it returns an empty input unless always.
// undecided counts the pods the kube-scheduler has yet to place or find unschedulable (see solver.AwaitingScheduler);
// it is counted only when the full snapshot is taken.
func (c *Controller) snapshot(ctx context.Context, always bool) (in solver.Input, undecided int, err error) {
	// Every pod, the cache's own objects (not even their structs copied: a list copied every Pod struct, 58 MB at
	// 50,000 pods, on every pass, and most passes, one per pod event, find nothing pending): the bound ones are
	// only read. The pending pods are copied, since a pass patches their nominations (a patch decodes the
	// response into the object).
	var all, pending []*corev1.Pod
	if err := c.deps.EachCachedPod(ctx, func(p *corev1.Pod) {
		all = append(all, p)
		switch {
		case solver.IsProvisionable(p):
			pending = append(pending, p)
		case solver.AwaitingScheduler(p):
			undecided++
		}
	}); err != nil {
		return in, 0, err
	}
	if len(pending) == 0 && !always {
		return in, 0, nil
	}
	for i, p := range pending {
		pending[i] = p.DeepCopy()
	}
	if len(pending) == 0 && !always {
		return in, undecided, nil
	}
	// The cache's NodeClaims (and, in clusterinput.Build, its Nodes), not copies: the pass reads them, and where it
	// needs a changed one it changes a copy (clusterinput.Build; the scheduler's adapter copies labels, taints and
	// allocatable). Copies of every NodeClaim and Node made each pass ~12 MB at 1,000 nodes, held while the pass ran.
	ncList := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, ncList, client.UnsafeDisableDeepCopy); err != nil {
		return in, undecided, fmt.Errorf("listing nodeclaims: %w", err)
	}
	in, err = clusterinput.Build(ctx, c.deps, pending, all, c.withCreated(ncList.Items), pending)
	return in, undecided, err
}
