package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// publishSlices creates the ResourceSlices of node, owned by it as a kubelet's DRA plugins own theirs (so the
// garbage collector removes any the sink misses). A slice left by an earlier Node of the same name, or with other
// contents, is replaced.
func (n *NodeSink) publishSlices(ctx context.Context, node *corev1.Node, slices []resourcev1.ResourceSlice) error {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	api := n.client.ResourceV1().ResourceSlices()
	for i := range slices {
		want := slices[i].DeepCopy()
		want.OwnerReferences = []metav1.OwnerReference{owner}
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ResourceSlice %s of node %s: %w", want.Name, node.Name, err)
		}
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting ResourceSlice %s of node %s: %w", want.Name, node.Name, err)
		}
		if equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) && equality.Semantic.DeepEqual(have.Spec, want.Spec) {
			continue
		}
		want.ResourceVersion = have.ResourceVersion
		if _, err := api.Update(ctx, want, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("replacing ResourceSlice %s of node %s: %w", want.Name, node.Name, err)
		}
	}
	return nil
}

// withdrawSlices deletes every ResourceSlice of node name, as its DRA drivers' slices go when a node goes.
func (n *NodeSink) withdrawSlices(ctx context.Context, name string) error {
	api := n.client.ResourceV1().ResourceSlices()
	list, err := api.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorNodeName, name).String()})
	if err != nil {
		return fmt.Errorf("listing ResourceSlices of node %s: %w", name, err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if s.Spec.NodeName == nil || *s.Spec.NodeName != name {
			continue // a client (or fake) that ignores the field selector
		}
		if err := api.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ResourceSlice %s of node %s: %w", s.Name, name, err)
		}
	}
	return nil
}
