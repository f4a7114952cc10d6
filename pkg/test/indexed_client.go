package test

import (
	"context"
	"fmt"
	"slices"

	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/operator/index"
)

// CacheIndexedClient wraps a client that talks to the API server directly so that it also answers lists by the
// field indexes the API server does not serve and the manager's cache does (index.VolumeAttachmentNodeName): such a
// list reads every object of the kind and keeps those the index's own function files under the value asked for.
// Other calls go to c unchanged.
func CacheIndexedClient(c client.Client) client.Client { return cacheIndexedClient{Client: c} }

type cacheIndexedClient struct{ client.Client }

func (c cacheIndexedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	vas, ok := list.(*storagev1.VolumeAttachmentList)
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.FieldSelector == nil {
		return c.Client.List(ctx, list, opts...)
	}
	node, found := o.FieldSelector.RequiresExactMatch(index.VolumeAttachmentNodeName)
	if !found || len(o.FieldSelector.Requirements()) != 1 {
		return fmt.Errorf("field selector %q: only an exact %s is served", o.FieldSelector, index.VolumeAttachmentNodeName)
	}
	all := &storagev1.VolumeAttachmentList{}
	if err := c.Client.List(ctx, all); err != nil {
		return err
	}
	vas.Items = vas.Items[:0]
	for i := range all.Items {
		if slices.Contains(index.VolumeAttachmentNode(&all.Items[i]), node) {
			vas.Items = append(vas.Items, all.Items[i])
		}
	}
	return nil
}
