package capacitybuffer

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// DisabledNotice says once, at start, that the CapacityBuffers in the cluster are ignored because the feature
// gate is off. It reads the API server directly (no informer on a kind that may not be installed).
type DisabledNotice struct {
	deps deps.Deps
}

// NewDisabledNotice returns the notice.
func NewDisabledNotice(d deps.Deps) *DisabledNotice { return &DisabledNotice{deps: d} }

// Register adds the one-shot check to the manager.
func (n *DisabledNotice) Register(_ context.Context, m manager.Manager) error {
	reader := m.GetAPIReader()
	return m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		n.Check(ctx, reader)
		return nil
	}))
}

// Check lists the buffers and logs one line naming how many are ignored (nothing when there are none or the
// CRD is not installed); it returns that number.
func (n *DisabledNotice) Check(ctx context.Context, r client.Reader) int {
	list := &autoscalingv1beta1.CapacityBufferList{}
	if err := r.List(ctx, list); err != nil {
		if !meta.IsNoMatchError(err) {
			log.FromContext(ctx).V(1).Info("could not list capacitybuffers", "error", err.Error())
		}
		return 0
	}
	if len(list.Items) == 0 {
		return 0
	}
	first := list.Items[0]
	log.FromContext(ctx).Info("CapacityBuffers are ignored: the CapacityBuffer feature gate is off (FEATURE_GATES=CapacityBuffer=true turns it on)",
		"capacitybuffers", len(list.Items), "capacitybuffer", first.Namespace+"/"+first.Name)
	return len(list.Items)
}
