// Package index names and registers the cache field indexes controllers list by: NodeClaims by
// status.providerID, Nodes by spec.providerID, Pods and VolumeAttachments by spec.nodeName.
package index

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Field index names, usable with client.MatchingFields.
const (
	NodeClaimProviderID = "status.providerID"
	NodeProviderID      = "spec.providerID"
	PodNodeName         = "spec.nodeName"
	// VolumeAttachmentNodeName indexes VolumeAttachments by the node they attach to. The API server offers no
	// field selector on it, so only a cache answers it.
	VolumeAttachmentNodeName = "spec.nodeName"
)

// Register adds the indexes to the manager's field indexer; call it before the manager starts.
func Register(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &karpv1.NodeClaim{}, NodeClaimProviderID, func(o client.Object) []string {
		if id := o.(*karpv1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by provider ID: %w", err)
	}
	if err := fi.IndexField(ctx, &corev1.Node{}, NodeProviderID, func(o client.Object) []string {
		if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodes by provider ID: %w", err)
	}
	if err := fi.IndexField(ctx, &corev1.Pod{}, PodNodeName, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by node name: %w", err)
	}
	if err := fi.IndexField(ctx, &storagev1.VolumeAttachment{}, VolumeAttachmentNodeName, VolumeAttachmentNode); err != nil {
		return fmt.Errorf("indexing volume attachments by node name: %w", err)
	}
	return nil
}

// VolumeAttachmentNode is the VolumeAttachmentNodeName index's function: the node a VolumeAttachment names.
func VolumeAttachmentNode(o client.Object) []string {
	if va, ok := o.(*storagev1.VolumeAttachment); ok && va.Spec.NodeName != "" {
		return []string{va.Spec.NodeName}
	}
	return nil
}
