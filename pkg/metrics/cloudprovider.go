package metrics

import (
	"context"
	"errors"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

type controllerKey struct{}

// WithController returns a context whose cloud provider calls are labelled with the controller's name.
func WithController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, controllerKey{}, name)
}

func controllerFrom(ctx context.Context) string {
	if name, ok := ctx.Value(controllerKey{}).(string); ok && name != "" {
		return name
	}
	return "unknown"
}

// ErrorKind names an error for the error label: the typed cloud provider errors by kind, anything else "Other".
func ErrorKind(err error) string {
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNotFound(err):
		return "NotFoundError"
	case cloudprovider.IsThrottled(err):
		return "ThrottledError"
	case cloudprovider.IsNodeClassNotReady(err):
		return "NodeClassNotReadyError"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "ContextError"
	}
	return "Other"
}

// InstrumentedCloudProvider records the duration and errors of every call to the wrapped provider.
type InstrumentedCloudProvider struct {
	cloudprovider.CloudProvider
	m   *Metrics
	now func() time.Time
}

// Instrument wraps cp so every call is measured in m.
func Instrument(cp cloudprovider.CloudProvider, m *Metrics) *InstrumentedCloudProvider {
	return &InstrumentedCloudProvider{CloudProvider: cp, m: m, now: time.Now}
}

// Unwrap returns the wrapped provider.
func (p *InstrumentedCloudProvider) Unwrap() cloudprovider.CloudProvider { return p.CloudProvider }

// observe records a call's duration, and its error labelled with the NodePool it was about (nodePool: "" when
// none, as for List).
func (p *InstrumentedCloudProvider) observe(ctx context.Context, method string, start time.Time, err error, nodePool string) {
	ctrl, prov := controllerFrom(ctx), p.CloudProvider.Name()
	p.m.CloudProviderDuration.WithLabelValues(ctrl, method, prov).Observe(p.now().Sub(start).Seconds())
	if err != nil {
		p.m.CloudProviderErrors.WithLabelValues(ctrl, method, prov, ErrorKind(err), nodePool).Inc()
	}
}

// nodePoolOf is the NodePool label of a NodeClaim, "" for none.
func nodePoolOf(nc *karpv1.NodeClaim) string {
	if nc == nil {
		return ""
	}
	return nc.Labels[karpv1.NodePoolLabelKey]
}

// Create implements cloudprovider.CloudProvider.
func (p *InstrumentedCloudProvider) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	start := p.now()
	out, err := p.CloudProvider.Create(ctx, nc)
	p.observe(ctx, "Create", start, err, nodePoolOf(nc))
	return out, err
}

// Delete implements cloudprovider.CloudProvider.
func (p *InstrumentedCloudProvider) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	start := p.now()
	err := p.CloudProvider.Delete(ctx, nc)
	p.observe(ctx, "Delete", start, err, nodePoolOf(nc))
	return err
}

// Get implements cloudprovider.CloudProvider.
func (p *InstrumentedCloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	start := p.now()
	out, err := p.CloudProvider.Get(ctx, providerID)
	p.observe(ctx, "Get", start, err, nodePoolOf(out))
	return out, err
}

// List implements cloudprovider.CloudProvider.
func (p *InstrumentedCloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	start := p.now()
	out, err := p.CloudProvider.List(ctx)
	p.observe(ctx, "List", start, err, "")
	return out, err
}

// GetInstanceTypes implements cloudprovider.CloudProvider.
func (p *InstrumentedCloudProvider) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	start := p.now()
	out, err := p.CloudProvider.GetInstanceTypes(ctx, np)
	nodePool := ""
	if np != nil {
		nodePool = np.Name
	}
	p.observe(ctx, "GetInstanceTypes", start, err, nodePool)
	if err == nil && np != nil {
		p.m.InstanceTypeOfferingPrice.Record(np.Name, out)
	}
	return out, err
}

// IsDrifted implements cloudprovider.CloudProvider.
func (p *InstrumentedCloudProvider) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	start := p.now()
	out, err := p.CloudProvider.IsDrifted(ctx, nc)
	p.observe(ctx, "IsDrifted", start, err, nodePoolOf(nc))
	return out, err
}
