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

	"github.com/dovetail/dovetail/pkg/termination"
)

// volumesDetached reports whether no VolumeAttachment holds the instance any more, and records it in the
// NodeClaim's VolumesDetached condition (naming the attachments still present) and in an event on the Node.
func (c *Controller) volumesDetached(ctx context.Context, node *corev1.Node, w *conditionWrites, deadline *time.Time) (bool, error) {
	list, err := c.clientset.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing volume attachments: %w", err)
	}
	var attachments []*storagev1.VolumeAttachment
	for i := range list.Items {
		if list.Items[i].Spec.NodeName == node.Name {
			attachments = append(attachments, &list.Items[i])
		}
	}
	var pods []*corev1.Pod
	claims := map[types.NamespacedName]string{}
	if len(attachments) > 0 {
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
			pvc, err := c.clientset.CoreV1().PersistentVolumeClaims(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
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
