package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/internal/disruptionview"
	"github.com/dovetail/dovetail/pkg/operator/index"
)

// register finds the Node of a launched NodeClaim, adopts it and syncs it.
func (c *Controller) register(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, bool, error) {
	if nc.IsTrue(karpv1.ConditionTypeRegistered) {
		c.registrations.forget(nc.Name)
		return reconcile.Result{}, false, nil
	}
	// Registered a moment ago by this controller, and the cache does not show it yet (a Node heartbeat brought the
	// NodeClaim back first): registering again would write from a stale copy, which the API server refuses. The
	// update recording the registration brings the NodeClaim back. A cache past that write that does not show it
	// (someone rewrote the status), or one that never shows it within maxCacheLag, is believed.
	if w, ok := c.registrations.get(nc); ok && w.ahead(nc, c.deps.Clock.Now()) {
		return reconcile.Result{RequeueAfter: cacheLagRequeue}, true, nil
	}
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "nodepool", nc.NodePoolName())
	stored := nc.DeepCopy()
	node, err := c.nodeFor(ctx, nc)
	if err != nil {
		return reconcile.Result{}, true, err
	}
	if node == nil {
		// REGISTRATION_TIMEOUT (settings): past it the NodeClaim is deleted; the termination controller then
		// terminates the instance.
		timeout := c.deps.Settings.RegistrationTimeout
		if age := c.since(nc); age >= timeout {
			logger.Info("node did not register in time, deleting nodeclaim", "provider-id", nc.Status.ProviderID,
				"age", age.String(), "registration-timeout", timeout.String())
			c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, karpv1.ReasonRegistrationTimeout,
				"No Node with providerID %s registered within %s; deleting the NodeClaim and terminating its instance",
				nc.Status.ProviderID, timeout)
			nc.SetFalse(karpv1.ConditionTypeRegistered, karpv1.ReasonRegistrationTimeout,
				fmt.Sprintf("no Node registered within %s", timeout))
			if err := c.patchStatus(ctx, stored, nc); err != nil {
				deps.LogError(log.IntoContext(ctx, logger), err, "recording registration timeout")
			}
			if err := c.recordRegistration(ctx, nc, false); err != nil {
				deps.LogError(log.IntoContext(ctx, logger), err, "recording the registration failure on the nodepool")
			}
			if err := c.deleteNodeClaim(ctx, nc); err != nil {
				return reconcile.Result{}, true, err
			}
			deps.CountDisrupted(ctx, c.deps, nc, karpv1.MetricReasonRegistrationTimeout, "")
			return reconcile.Result{}, true, nil
		}
		waitingForNode(nc)
		wait := timeout - c.since(nc)
		if wait > registrationRequeue {
			wait = registrationRequeue
		}
		return reconcile.Result{RequeueAfter: wait}, true, c.patchStatus(ctx, stored, nc)
	}
	if _, synced := node.Labels[karpv1.NodeRegisteredLabelKey]; !synced && !hasUnregisteredTaint(node) {
		// The Node joined without the taint that keeps pods off it until registration synced it: pods may land
		// before its labels and taints are there. Registration goes on.
		logger.Info("node registered without the unregistered taint", "node", node.Name, "taint", karpv1.UnregisteredTaintKey)
		c.deps.Recorder.Event(nc, corev1.EventTypeWarning, karpv1.EventReasonUnregisteredTaintMissing,
			fmt.Sprintf("Node %s joined without the %s taint, so pods could be scheduled to it before its labels and taints were synced", node.Name, karpv1.UnregisteredTaintKey))
	}
	nominated := c.nominatePlanned(ctx, nc, node, c.deps.Client)
	if err := c.syncNode(ctx, nc, node); err != nil {
		return reconcile.Result{}, true, err
	}
	// Again now that the Node is schedulable: a 1.34 kube-scheduler clears a pod's nomination whenever an attempt
	// to place the pod fails (its preemption step finds no candidate), and the nomination just written makes it
	// try the pod again while the Node still had the unregistered taint. A pod still nominated is left alone; the
	// pods are read from the API server, where the cache may not show the clearing yet.
	nominated += c.nominatePlanned(ctx, nc, node, c.apiReader())
	// The same write records what keeps the Node from being initialized (usually that it is not Ready yet), as
	// the initialization would write next: one NodeClaim write less a node in a scale-out.
	synced := DesiredNode(nc, node)
	registered := func(nc *karpv1.NodeClaim) {
		nc.Status.NodeName = node.Name
		nc.SetTrue(karpv1.ConditionTypeRegistered, karpv1.ReasonRegistered)
		if reason, msg := NotInitialized(nc, synced); reason != "" && !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			nc.SetFalse(karpv1.ConditionTypeInitialized, reason, msg)
		}
	}
	registered(nc)
	if err := c.patchStatusFresh(ctx, stored, nc, registered); err != nil {
		return reconcile.Result{}, true, err
	}
	c.registrations.recorded(nc, c.deps.Clock.Now())
	if err := c.recordRegistration(ctx, nc, true); err != nil {
		deps.LogError(log.IntoContext(ctx, logger), err, "recording the registration on the nodepool")
	}
	c.deps.Metrics.NodeClaimRegistrationDuration.WithLabelValues(nc.NodePoolName()).Observe(c.since(nc).Seconds())
	c.deps.Metrics.CountNodeCreated(nc)
	logger.Info("registered nodeclaim", "node", node.Name, "provider-id", nc.Status.ProviderID, "nominated-pods", nominated)
	return reconcile.Result{}, false, nil
}

// hasUnregisteredTaint reports whether the Node carries karpenter.sh/unregistered:NoExecute.
func hasUnregisteredTaint(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.UnregisteredTaintKey && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// waitingForNode marks the NodeClaim as launched but without a Node yet. The launch records it with the launch
// itself, so that the registration passes before the Node appears find nothing to write: a write of their own
// was one more request a node in a scale-out, and left the cache one write behind for the registration's.
func waitingForNode(nc *karpv1.NodeClaim) {
	nc.SetFalse(karpv1.ConditionTypeRegistered, karpv1.ReasonNodeNotFound,
		fmt.Sprintf("waiting for a Node with providerID %s to join the cluster", nc.Status.ProviderID))
}

// nodeFor returns the Node whose spec.providerID is the NodeClaim's, nil if none yet.
func (c *Controller) nodeFor(ctx context.Context, nc *karpv1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.deps.Client.List(ctx, nodes, client.MatchingFields{index.NodeProviderID: nc.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodes by provider ID: %w", err)
	}
	switch len(nodes.Items) {
	case 0:
		return nil, nil
	case 1:
		return &nodes.Items[0], nil
	}
	return nil, fmt.Errorf("%d nodes have providerID %s", len(nodes.Items), nc.Status.ProviderID)
}

// syncNode adopts the Node and applies the NodeClaim's labels, annotations and taints to it. The patch is
// computed from the Node just read and tests that the Node's taints, finalizers and owner references are still
// what it was computed from (registrationPatch), so a taint another controller removed meanwhile (the cloud
// controller manager's uninitialized taint) is never written back. When that test fails (under load the cache
// is behind) the patch is computed and sent once more from the Node read from the API server; a second failure
// fails the pass.
func (c *Controller) syncNode(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) error {
	err := c.patchNode(ctx, nc, node)
	if !isStale(err) {
		return err
	}
	fresh := &corev1.Node{}
	if gerr := c.apiReader().Get(ctx, client.ObjectKeyFromObject(node), fresh); gerr == nil && fresh.UID == node.UID {
		err = c.patchNode(ctx, nc, fresh)
	}
	if isStale(err) && !apierrors.IsConflict(err) {
		// A failed test is a conflict to the caller: the pass is retried after the conflict backoff.
		return apierrors.NewConflict(corev1.Resource("nodes"), node.Name, err)
	}
	return err
}

// isStale reports whether a write was refused for having been computed from an outdated copy: an
// optimistic-lock conflict, or a JSON patch that could not be applied — a failed test, which the API server
// answers with 422 and no detail. A 422 of validation names its fields (causes) and is a real error.
func isStale(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	return details == nil || len(details.Causes) == 0
}

func (c *Controller) patchNode(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) error {
	desired := DesiredNode(nc, node)
	body, err := registrationPatch(node, desired)
	if err != nil || body == nil {
		return err
	}
	if err := c.deps.Client.Patch(ctx, desired, client.RawPatch(types.JSONPatchType, body)); err != nil {
		return fmt.Errorf("syncing node %s: %w", node.Name, err)
	}
	return nil
}

// DesiredNode returns node with the NodeClaim's registration applied: the unregistered taint removed, the
// NodeClaim's taints and startup taints added unless present (or the node opts out with
// karpenter.sh/do-not-sync-taints), labels and annotations copied, karpenter.sh/registered=true, the
// termination finalizer and an owner reference to the NodeClaim. It starts from the node's current taints and
// never adds node.cloudprovider.kubernetes.io/uninitialized.
func DesiredNode(nc *karpv1.NodeClaim, node *corev1.Node) *corev1.Node {
	out := node.DeepCopy()
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.UnregisteredTaintKey {
			continue
		}
		taints = append(taints, t)
	}
	if node.Labels[karpv1.NodeDoNotSyncTaintsLabelKey] != "true" {
		for _, t := range append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...) {
			if t.Key == karpv1.CloudProviderUninitializedTaintKey || t.Key == karpv1.UnregisteredTaintKey {
				continue
			}
			if !hasTaint(taints, t) {
				taints = append(taints, t)
			}
		}
		// A disruption command's replacement is held for its pods until the command drains (the disruption
		// controller lifts the hold then, or once the command is over).
		if id := nc.Annotations[disruptionview.ReplacementForAnnotationKey]; id != "" &&
			!slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == disruptionview.ReplacementHoldTaintKey }) {
			taints = append(taints, disruptionview.ReplacementHoldTaint(id))
		}
	}
	out.Spec.Taints = taints
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range nc.Labels {
		out.Labels[k] = v
	}
	out.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	for k, v := range nc.Annotations {
		if k == deps.PlannedPodsAnnotationKey {
			continue // the provisioner's bookkeeping, of no use on the Node
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	controllerutil.AddFinalizer(out, karpv1.TerminationFinalizer)
	owner := metav1.OwnerReference{
		APIVersion:         karpv1.SchemeGroupVersion.String(),
		Kind:               "NodeClaim",
		Name:               nc.Name,
		UID:                nc.UID,
		BlockOwnerDeletion: ptr.To(true),
	}
	found := false
	for _, o := range out.OwnerReferences {
		if o.UID == nc.UID {
			found = true
		}
	}
	if !found {
		out.OwnerReferences = append(out.OwnerReferences, owner)
	}
	return out
}

// hasTaint matches by key and effect, as the kubelet and scheduler do.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, x := range taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// registrationMemo remembers when this controller recorded each NodeClaim's registration, until the cache shows
// it (or the NodeClaim goes). Safe for concurrent use.
type registrationMemo struct {
	mu sync.Mutex
	m  map[string]registrationEntry
}

type registrationEntry struct {
	uid   types.UID
	write writeMark
}

func newRegistrationMemo() *registrationMemo {
	return &registrationMemo{m: map[string]registrationEntry{}}
}

// recorded notes that nc, as the API server answered the status write, records its registration.
func (r *registrationMemo) recorded(nc *karpv1.NodeClaim, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[nc.Name] = registrationEntry{uid: nc.UID, write: writeMark{at: at, resourceVersion: nc.ResourceVersion}}
}

// get returns the write with which this controller registered nc (the same object: its UID), if it did.
func (r *registrationMemo) get(nc *karpv1.NodeClaim) (writeMark, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[nc.Name]
	if !ok || e.uid != nc.UID {
		return writeMark{}, false
	}
	return e.write, true
}

func (r *registrationMemo) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}
