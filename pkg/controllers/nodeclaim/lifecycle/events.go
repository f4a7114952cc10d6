package lifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// maxMessage is the longest event message written; longer ones are cut (the API server refuses events over 1 KiB
// of message).
const maxMessage = 1024

func truncate(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return msg[:maxMessage-3] + "..."
}

// announceInsufficientCapacity emits InsufficientCapacityError (a Warning) on the NodeClaim whose launch found no
// capacity and on each pod the provisioner planned on it that still waits for a node (not bound, not finished,
// not being deleted), so that the pod's owner sees why no node is coming without reading the controller's logs.
func (c *Controller) announceInsufficientCapacity(ctx context.Context, nc *karpv1.NodeClaim, launchErr error) {
	c.deps.Recorder.Event(nc, corev1.EventTypeWarning, karpv1.EventReasonInsufficientCapacityError,
		truncate("NodeClaim "+nc.Name+" could not launch: "+launchErr.Error()))
	if c.deps.Plans == nil {
		return
	}
	for _, ref := range c.deps.Plans.Planned(nc.Name) {
		pod := &corev1.Pod{}
		if err := c.deps.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, pod); err != nil {
			continue
		}
		if (ref.UID != "" && pod.UID != ref.UID) || pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		c.deps.Recorder.Event(pod, corev1.EventTypeWarning, karpv1.EventReasonInsufficientCapacityError,
			truncate("NodeClaim "+nc.Name+" planned for this pod could not launch: "+launchErr.Error()))
	}
}
