package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/termination"
)

// volumesDetached reports whether no VolumeAttachment holds the instance any more, and records it in the
// NodeClaim's VolumesDetached condition (naming the attachments still present) and in an event on the Node.
// The attachments are read from the cache by node name: each pass of each terminating node asking the API server
// for every VolumeAttachment of the cluster grew with the cluster in a mass drift. Their removal requeues the
// Node (Register), so the cache's lag costs no more than a watch event's.
func (c *Controller) volumesDetached(ctx context.Context, node *corev1.Node, w *conditionWrites, deadline *time.Time) (bool, error) {
	list := &storagev1.VolumeAttachmentList{}
	if err := c.kube.List(ctx, list, client.MatchingFields{index.VolumeAttachmentNodeName: node.Name}); err != nil {
		return false, fmt.Errorf("listing volume attachments of node %s: %w", node.Name, err)
	}
	attachments := make([]*storagev1.VolumeAttachment, 0, len(list.Items))
	for i := range list.Items {
		attachments = append(attachments, &list.Items[i])
	}
	var pods []*corev1.Pod
	claims := map[types.NamespacedName]string{}
	if len(attachments) > 0 {
		var err error
		if pods, err = c.podsOnNode(ctx, node.Name); err != nil {
			return false, err
		}
		if claims, err = c.claimVolumes(ctx, pods); err != nil {
			return false, err
		}
	}
	now := c.clock.Now()
	blocking := termination.BlockingVolumeAttachments(node.Name, attachments, pods, claims, now)

	status, reason, msg := metav1.ConditionTrue, "VolumesDetached", ""
	if len(blocking) > 0 {
		names := make([]string, 0, len(blocking))
		for _, va := range blocking {
			name := va.Name
			if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
				name += " (volume " + *pv + ")"
			}
			names = append(names, name)
		}
		if termination.Expired(deadline, now) {
			reason = "TerminationGracePeriodElapsed"
			msg = "terminationGracePeriod ended with VolumeAttachments still present: " + strings.Join(names, ", ")
		} else {
			status, reason = metav1.ConditionFalse, "AwaitingVolumeDetachment"
			msg = "Waiting for VolumeAttachments to be removed: " + strings.Join(names, ", ")
			c.event(node, corev1.EventTypeNormal, ReasonAwaitingVolumes, msg)
		}
	}
	c.setCondition(w, termination.ConditionTypeVolumesDetached, status, reason, msg)
	return len(blocking) == 0, nil
}

// claimVolumes maps the pods' PersistentVolumeClaims to the volumes bound to them.
func (c *Controller) claimVolumes(ctx context.Context, pods []*corev1.Pod) (map[types.NamespacedName]string, error) {
	out := map[types.NamespacedName]string{}
	for _, pod := range pods {
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			key := types.NamespacedName{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}
			if _, done := out[key]; done {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			err := c.kube.Get(ctx, key, pvc)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("getting claim %s: %w", key, err)
			}
			if pvc.Spec.VolumeName != "" {
				out[key] = pvc.Spec.VolumeName
			}
		}
	}
	return out, nil
}
