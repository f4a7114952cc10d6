package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

var _ awssim.NodeRebooter = (*NodeSink)(nil)

// kubeletConditions are the conditions the kubelet itself reports (kwok writes them); a reboot leaves them to it.
var kubeletConditions = map[corev1.NodeConditionType]bool{
	corev1.NodeReady: true, corev1.NodeMemoryPressure: true, corev1.NodeDiskPressure: true, corev1.NodePIDPressure: true,
	corev1.NodeNetworkUnavailable: true,
}

// BeginReboot marks the Node rebooting (awssim.RebootingAnnotation, which keeps kwok from reporting it Ready) and
// reports it NotReady, as a kubelet going down does. A missing Node is not an error.
func (n *NodeSink) BeginReboot(ctx context.Context, name string) error {
	return n.rebootStep(ctx, name, func(node *corev1.Node) {
		setCondition(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			Message: "node is rebooting"})
	}, func(node *corev1.Node) bool {
		if node.Annotations[awssim.RebootingAnnotation] == "true" {
			return false
		}
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[awssim.RebootingAnnotation] = "true"
		return true
	})
}

// EndReboot brings the Node back: a new boot ID, Ready, and every node monitoring agent condition (any condition
// the kubelet does not write) that was False reported True again, as after a reboot that cleared the fault.
func (n *NodeSink) EndReboot(ctx context.Context, name, bootID string) error {
	return n.rebootStep(ctx, name, func(node *corev1.Node) {
		node.Status.NodeInfo.BootID = bootID
		setCondition(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status"})
		for _, c := range append([]corev1.NodeCondition(nil), node.Status.Conditions...) {
			if !kubeletConditions[c.Type] && c.Status == corev1.ConditionFalse {
				setCondition(node, corev1.NodeCondition{Type: c.Type, Status: corev1.ConditionTrue, Reason: "Healthy",
					Message: "cleared by a reboot"})
			}
		}
	}, func(node *corev1.Node) bool {
		if _, ok := node.Annotations[awssim.RebootingAnnotation]; !ok {
			return false
		}
		delete(node.Annotations, awssim.RebootingAnnotation)
		return true
	})
}

// rebootStep writes the Node's metadata change first (the annotation kwok reads), then its status.
func (n *NodeSink) rebootStep(ctx context.Context, name string, status func(*corev1.Node), meta func(*corev1.Node) bool) error {
	nodes := n.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if meta(node) {
			if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		status(node)
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rebooting node %s: %w", name, err)
	}
	return nil
}

// setCondition puts c on the Node, stamping its times; the transition time changes only with the status.
func setCondition(node *corev1.Node, c corev1.NodeCondition) {
	now := metav1.Now()
	c.LastHeartbeatTime, c.LastTransitionTime = now, now
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type != c.Type {
			continue
		}
		if node.Status.Conditions[i].Status == c.Status {
			c.LastTransitionTime = node.Status.Conditions[i].LastTransitionTime
		}
		node.Status.Conditions[i] = c
		return
	}
	node.Status.Conditions = append(node.Status.Conditions, c)
}
