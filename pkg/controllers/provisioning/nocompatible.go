package provisioning

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/requirements"
	"github.com/dovetail/dovetail/pkg/settings"
)

// NoCompatibleRepeat is how often NoCompatibleInstanceTypes is repeated for a NodePool that stays without a
// compatible instance type while pods are pending.
const NoCompatibleRepeat = time.Minute

// noCompatibleInstanceTypes says why none of the NodePool's instance types can be launched for its template
// requirements ("" when at least one can): no type (with an offering) satisfies them, or, under the Strict
// minValues policy, the types that do offer fewer distinct values of a key than its minValues. Requirements on
// keys an instance type does not describe (the NodePool's own labels) are not held against it.
func noCompatibleInstanceTypes(np *karpv1.NodePool, its []*cloudprovider.InstanceType, minValuesPolicy string) string {
	var reqs []corev1.NodeSelectorRequirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, r.NodeSelectorRequirement)
	}
	var compatible []*cloudprovider.InstanceType
	for _, it := range its {
		labels := map[string]string{corev1.LabelInstanceTypeStable: it.Name}
		for k, v := range it.Labels {
			labels[k] = v
		}
		if !requirements.Matches(reqs, labels, func(k string) bool { _, ok := labels[k]; return ok }) {
			continue
		}
		for _, o := range it.Offerings {
			if requirements.Allows(reqs, corev1.LabelTopologyZone, o.Zone) && requirements.Allows(reqs, karpv1.CapacityTypeLabelKey, o.CapacityType) {
				compatible = append(compatible, it)
				break
			}
		}
	}
	if len(compatible) == 0 {
		return "the requirements of nodepool " + np.Name + " leave no instance type that can be launched"
	}
	if minValuesPolicy == settings.MinValuesPolicyBestEffort {
		return ""
	}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.MinValues == nil {
			continue
		}
		values := map[string]bool{}
		for _, it := range compatible {
			switch v, ok := it.Labels[r.Key]; {
			case r.Key == corev1.LabelInstanceTypeStable:
				values[it.Name] = true
			case ok:
				values[v] = true
			}
		}
		if len(values) < *r.MinValues {
			return fmt.Sprintf("the requirements of nodepool %s leave %d distinct values of %s, fewer than its minValues %d",
				np.Name, len(values), r.Key, *r.MinValues)
		}
	}
	return ""
}

// announceNoCompatible emits NoCompatibleInstanceTypes (a Warning, on the NodePool) for each NodePool of the pass
// none of whose instance types can be launched, at most once a NoCompatibleRepeat per NodePool.
func (c *Controller) announceNoCompatible(pools []solver.NodePoolOption) {
	now := c.deps.Clock.Now()
	for _, p := range pools {
		why := noCompatibleInstanceTypes(p.NodePool, p.InstanceTypes, c.deps.Settings.MinValuesPolicy)
		if why == "" {
			continue
		}
		if at, ok := c.noCompatible[p.NodePool.UID]; ok && now.Sub(at) < NoCompatibleRepeat {
			continue
		}
		c.noCompatible[p.NodePool.UID] = now
		c.deps.Recorder.Event(p.NodePool, corev1.EventTypeWarning, karpv1.EventReasonNoCompatibleInstanceTypes, why)
	}
	for uid, at := range c.noCompatible {
		if now.Sub(at) >= NoCompatibleRepeat {
			delete(c.noCompatible, uid)
		}
	}
}

// noCompatibleSeen is when NoCompatibleInstanceTypes was last emitted per NodePool.
type noCompatibleSeen = map[types.UID]time.Time
