package deps

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/metrics"
)

// For returns the dependencies as the named controller sees them: the same, except that its client's writes are
// counted under the controller's name (dovetail_api_writes_total), and those the API server refuses with 409
// Conflict or 422 Unprocessable Entity again on their own (dovetail_api_write_conflicts_total,
// dovetail_api_write_invalid_total). Without metrics it returns d as is.
func (d Deps) For(controller string) Deps {
	if d.Metrics == nil || d.Client == nil {
		return d
	}
	d.Client = &countingClient{Client: d.Client, controller: controller, metrics: d.Metrics}
	return d
}

// countingClient is a client.Client that counts its writes, and those refused, by controller, verb and kind.
type countingClient struct {
	client.Client
	controller string
	metrics    *metrics.Metrics
}

// observe counts the write, and err if the API server refused it with a conflict or as invalid, and returns err.
func (c *countingClient) observe(verb string, obj runtime.Object, err error) error {
	c.metrics.APIWrites.WithLabelValues(c.controller, verb, c.kindOf(obj)).Inc()
	if err == nil {
		return nil
	}
	switch {
	case apierrors.IsConflict(err):
		c.metrics.APIWriteConflicts.WithLabelValues(c.controller, verb, c.kindOf(obj)).Inc()
	case apierrors.IsInvalid(err):
		c.metrics.APIWriteInvalid.WithLabelValues(c.controller, verb, c.kindOf(obj)).Inc()
	}
	return err
}

// kindOf names obj's kind, or "unknown" when the scheme does not know it.
func (c *countingClient) kindOf(obj runtime.Object) string {
	if gvk, err := c.GroupVersionKindFor(obj); err == nil && gvk.Kind != "" {
		return gvk.Kind
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return "unknown"
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.observe("create", obj, c.Client.Create(ctx, obj, opts...))
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.observe("update", obj, c.Client.Update(ctx, obj, opts...))
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.observe("patch", obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.observe("delete", obj, c.Client.Delete(ctx, obj, opts...))
}

func (c *countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.observe("deletecollection", obj, c.Client.DeleteAllOf(ctx, obj, opts...))
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingSubResource{SubResourceClient: c.Client.SubResource("status"), parent: c, name: "status"}
}

func (c *countingClient) SubResource(name string) client.SubResourceClient {
	return &countingSubResource{SubResourceClient: c.Client.SubResource(name), parent: c, name: name}
}

// countingSubResource counts the writes of one subresource, as verb "<subresource>/<verb>".
type countingSubResource struct {
	client.SubResourceClient
	parent *countingClient
	name   string
}

func (s *countingSubResource) verb(v string) string { return strings.ToLower(s.name) + "/" + v }

func (s *countingSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.parent.observe(s.verb("create"), obj, s.SubResourceClient.Create(ctx, obj, sub, opts...))
}

func (s *countingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.parent.observe(s.verb("update"), obj, s.SubResourceClient.Update(ctx, obj, opts...))
}

func (s *countingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.parent.observe(s.verb("patch"), obj, s.SubResourceClient.Patch(ctx, obj, patch, opts...))
}
