package lifecycle

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// initialize marks the NodeClaim Initialized once its Node is ready for pods.
func (c *Controller) initialize(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	// A node that reboots (node repair's reboot) is initialized again only once the reboot has ended: until then
	// the running, not yet rebooted node could pass the checks below.
	if nc.IsTrue(karpv1.ConditionTypeInitialized) || nc.Status.NodeName == "" || nc.IsTrue(karpv1.ConditionTypeRebooting) {
		return reconcile.Result{}, false, nil
	}
	stored := nc.DeepCopy()
	node := &corev1.Node{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return reconcile.Result{}, true, client.IgnoreNotFound(fmt.Errorf("getting node %s: %w", nc.Status.NodeName, err))
	}
	if reason, msg := NotInitialized(nc, node); reason != "" {
		nc.SetFalse(karpv1.ConditionTypeInitialized, reason, msg)
		return reconcile.Result{}, true, c.patchStatus(ctx, stored, nc)
	}
	// The Node takes pods now. A 1.34 kube-scheduler clears a pod's nomination whenever an attempt to place it
	// fails, which happens while the Node is still NotReady or tainted after registration; a planned pod whose
	// nomination the cache shows cleared is nominated again, before other pods take the room kept for it.
	c.nominatePlanned(ctx, nc, node, c.deps.Client)
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		before := node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		// A merge patch of one label adds just that key: it needs no lock, and a lock failed whenever the
		// kubelet or another controller had written the Node since the cache read it (a conflict on about half
		// the Nodes of a 1,000-node scale-out, each costing the NodeClaim a backoff and another pass).
		if err := c.deps.Client.Patch(ctx, node, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, true, client.IgnoreNotFound(fmt.Errorf("labelling node %s initialized: %w", node.Name, err))
		}
	}
	initialized := func(nc *karpv1.NodeClaim) { nc.SetTrue(karpv1.ConditionTypeInitialized, karpv1.ReasonInitialized) }
	initialized(nc)
	if err := c.patchStatusFresh(ctx, stored, nc, initialized); err != nil {
		return reconcile.Result{}, true, err
	}
	c.deps.Metrics.NodeClaimInitializationDuration.WithLabelValues(nc.NodePoolName()).Observe(c.since(nc).Seconds())
	log.FromContext(ctx).Info("initialized nodeclaim", "nodeclaim", nc.Name, "node", node.Name, "nodepool", nc.NodePoolName())
	return reconcile.Result{}, false, nil
}

// ephemeralTaints are removed by the kubelet, node lifecycle controller or cloud controller manager; a node
// carrying one is not initialized yet.
var ephemeralTaintKeys = []string{
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	karpv1.CloudProviderUninitializedTaintKey,
	karpv1.UnregisteredTaintKey,
}

// NotInitialized returns a condition reason and a message naming exactly what keeps the Node from being
// initialized, or "" when it is ready: Ready condition, startup and ephemeral taints, requested extended resources.
func NotInitialized(nc *karpv1.NodeClaim, node *corev1.Node) (string, string) {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return karpv1.ReasonNodeNotReady, fmt.Sprintf("Node %s is not Ready", node.Name)
	}
	var left []string
	for _, t := range nc.Spec.StartupTaints {
		if hasTaint(node.Spec.Taints, t) {
			left = append(left, taintString(t))
		}
	}
	for _, t := range node.Spec.Taints {
		for _, k := range ephemeralTaintKeys {
			if t.Key == k {
				left = append(left, taintString(t))
			}
		}
	}
	if len(left) > 0 {
		return karpv1.ReasonStartupTaintsExist, fmt.Sprintf("Node %s still has taint(s) %s", node.Name, strings.Join(left, ", "))
	}
	// Only the extended resources the NodeClaim's pods request must be registered, as in Karpenter: a type's
	// capacity may name resources whose device plugin the cluster does not run (EFA, Windows IPAM), and the node
	// serves the other pods without them.
	var missing []string
	for name, q := range nc.Spec.Resources.Requests {
		if !isExtended(name) || q.IsZero() {
			continue
		}
		have, ok := node.Status.Allocatable[name]
		if !ok || have.IsZero() {
			missing = append(missing, string(name))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return karpv1.ReasonResourcesNotReady, fmt.Sprintf("Node %s has not registered resource(s) %s", node.Name, strings.Join(missing, ", "))
	}
	return "", ""
}

func isExtended(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		return false
	}
	return !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}
