package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// NodeSink writes simulator Nodes through a Kubernetes clientset.
type NodeSink struct {
	client kubernetes.Interface
}

var _ awssim.NodeSink = (*NodeSink)(nil)

// New returns a NodeSink using client.
func New(client kubernetes.Interface) *NodeSink { return &NodeSink{client: client} }

// CreateNode creates the Node, sets its status (capacity, allocatable, addresses) and publishes its
// ResourceSlices. Creating a Node that already exists with the same providerID is not an error.
func (n *NodeSink) CreateNode(ctx context.Context, spec awssim.NodeSpec) error {
	want := spec.Node()
	created, err := n.client.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := n.client.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("getting existing node %s: %w", want.Name, getErr)
		}
		if existing.Spec.ProviderID != want.Spec.ProviderID {
			return fmt.Errorf("node %s already exists with providerID %q, want %q", want.Name, existing.Spec.ProviderID, want.Spec.ProviderID)
		}
		created = existing
	} else if err != nil {
		return fmt.Errorf("creating node %s: %w", want.Name, err)
	}
	if !statusMatches(created.Status, want.Status) {
		if err := n.setStatus(ctx, want); err != nil {
			return err
		}
	}
	return n.publishSlices(ctx, created, spec.ResourceSlices)
}

// setStatus writes want's status (capacity, allocatable, addresses, node info, a first Ready condition) on the Node.
func (n *NodeSink) setStatus(ctx context.Context, want *corev1.Node) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := n.client.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting node %s: %w", want.Name, err)
		}
		cur.Status.Capacity = want.Status.Capacity
		cur.Status.Allocatable = want.Status.Allocatable
		cur.Status.Addresses = want.Status.Addresses
		cur.Status.NodeInfo = want.Status.NodeInfo
		if !hasReady(cur.Status) {
			// Not Ready until kwok says so; a Ready condition kwok already set stays.
			cur.Status.Conditions = append(cur.Status.Conditions, want.Status.Conditions...)
		}
		if _, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting status of node %s: %w", want.Name, err)
		}
		return nil
	})
}

func hasReady(st corev1.NodeStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.NodeReady {
			return true
		}
	}
	return false
}

func statusMatches(have, want corev1.NodeStatus) bool {
	if hasReady(want) && !hasReady(have) {
		return false
	}
	if len(have.Addresses) != len(want.Addresses) || len(have.Capacity) != len(want.Capacity) || len(have.Allocatable) != len(want.Allocatable) {
		return false
	}
	for k, v := range want.Capacity {
		if h, ok := have.Capacity[k]; !ok || h.Cmp(v) != 0 {
			return false
		}
	}
	for k, v := range want.Allocatable {
		if h, ok := have.Allocatable[k]; !ok || h.Cmp(v) != 0 {
			return false
		}
	}
	return true
}

// DeleteNode deletes the Node's ResourceSlices and the Node; a missing Node is not an error.
func (n *NodeSink) DeleteNode(ctx context.Context, name string) error {
	if err := n.withdrawSlices(ctx, name); err != nil {
		return err
	}
	err := n.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// RemoveTaint removes every taint with key from the Node. A missing Node is not an error (it was deleted).
func (n *NodeSink) RemoveTaint(ctx context.Context, name, key string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("getting node %s: %w", name, err)
		}
		kept := node.Spec.Taints[:0:0]
		for _, t := range node.Spec.Taints {
			if t.Key != key {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		if _, err := n.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("removing taint %s from node %s: %w", key, name, err)
		}
		return nil
	})
}
