package overlay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// ErrNotEvaluated is returned (wrapped in a NodeClassNotReadyError) while the nodeoverlay controller has not yet
// evaluated the cluster's overlays: launching before that could pick an instance type an overlay rules out.
var ErrNotEvaluated = errors.New("NodeOverlays are not evaluated yet")

// Store holds the overlays the nodeoverlay controller last decided to apply. It is safe for concurrent use.
type Store struct {
	mu        sync.RWMutex
	evaluated bool
	applied   []karpv1alpha1.NodeOverlay
}

// NewStore returns a store that has not been evaluated yet.
func NewStore() *Store { return &Store{} }

// Set replaces the applied overlays (ordered as Evaluate returns them) and marks the store evaluated.
func (s *Store) Set(applied []karpv1alpha1.NodeOverlay) {
	cp := make([]karpv1alpha1.NodeOverlay, len(applied))
	for i := range applied {
		applied[i].DeepCopyInto(&cp[i])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.evaluated = cp, true
}

// Applied returns the applied overlays and whether the store was evaluated.
func (s *Store) Applied() ([]karpv1alpha1.NodeOverlay, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applied, s.evaluated
}

// OverlayInstanceTypes applies the stored overlays to its for a pool whose nodes carry poolLabels. It fails
// with ErrNotEvaluated before the first Set.
func (s *Store) OverlayInstanceTypes(poolLabels map[string]string, its []*cloudprovider.InstanceType) ([]*cloudprovider.InstanceType, error) {
	applied, ok := s.Applied()
	if !ok {
		return nil, ErrNotEvaluated
	}
	return Apply(applied, poolLabels, its), nil
}

// CloudProvider serves the cloud provider's instance types with the stored overlays applied, so provisioning,
// disruption, static NodePools and every other caller of GetInstanceTypes see the same overlaid types.
type CloudProvider struct {
	cloudprovider.CloudProvider
	store *Store
}

// Wrap returns cp with GetInstanceTypes overlaid from store.
func Wrap(cp cloudprovider.CloudProvider, store *Store) *CloudProvider {
	return &CloudProvider{CloudProvider: cp, store: store}
}

// Unwrap returns the wrapped provider.
func (p *CloudProvider) Unwrap() cloudprovider.CloudProvider { return p.CloudProvider }

// GetInstanceTypes implements cloudprovider.CloudProvider.
func (p *CloudProvider) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	its, err := p.CloudProvider.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, err
	}
	out, err := p.store.OverlayInstanceTypes(PoolLabels(np), its)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("NodePool %s: %w", np.Name, err))
	}
	return out, nil
}
