package disruption

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// drift is why a NodeClaim no longer matches what its NodePool or node class would launch today. A zero
// drift (empty Reason) means the NodeClaim is up to date.
type drift struct {
	Reason  string
	Message string
}

// hashDrift compares the template hash recorded on the NodeClaim at launch with the NodePool's current one.
// Hashes computed by different schemes are not comparable, so a version mismatch (or a missing hash) is not
// drift: the NodeClaim's annotations must be brought to the new scheme first.
func hashDrift(nc *karpv1.NodeClaim, np *karpv1.NodePool) drift {
	have, haveVersion := nc.Annotations[karpv1.NodePoolHashAnnotationKey], nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	want, wantVersion := np.Annotations[karpv1.NodePoolHashAnnotationKey], np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	if have == "" || want == "" || haveVersion != wantVersion || have == want {
		return drift{}
	}
	return drift{
		Reason:  karpv1.ReasonNodePoolDrifted,
		Message: fmt.Sprintf("nodepool hash %s != %s: the template of nodepool %s changed after the node was launched", have, want, np.Name),
	}
}

// nodeLabels returns the labels the requirements are checked against: the NodeClaim's (set at launch from
// the offering: instance type, zone, capacity type, ...) completed by the Node's for keys the NodeClaim lacks
// (e.g. labels the kubelet adds). node may be nil.
func nodeLabels(nc *karpv1.NodeClaim, node *corev1.Node) map[string]string {
	out := make(map[string]string, len(nc.Labels))
	for k, v := range nc.Labels {
		out[k] = v
	}
	if node != nil {
		for k, v := range node.Labels {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}

// requirementsDrift reports the first NodePool template requirement (in the NodePool's order) that a label of
// the node contradicts. A requirement on a label the node does not carry is not drift: the node has no value
// that could contradict it.
func requirementsDrift(labels map[string]string, np *karpv1.NodePool) drift {
	for _, r := range np.Spec.Template.Spec.Requirements {
		v, ok := labels[r.Key]
		if !ok || requirements.Match(r.NodeSelectorRequirement, v, true) {
			continue
		}
		return drift{
			Reason: karpv1.ReasonRequirementsDrifted,
			Message: fmt.Sprintf("label %s=%s no longer allowed by nodepool requirements (%s)",
				r.Key, v, requirementString(r.NodeSelectorRequirement)),
		}
	}
	return drift{}
}

func requirementString(r corev1.NodeSelectorRequirement) string {
	switch r.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return fmt.Sprintf("%s %s", r.Key, r.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", r.Key, r.Operator, strings.Join(r.Values, ", "))
}

// instanceTypeCheckAge is how old a NodeClaim must be before its instance type is looked for among the ones the
// cloud provider still offers: a young NodeClaim's type was offered moments ago.
const instanceTypeCheckAge = time.Hour

// instanceTypeDrift reports InstanceTypeNotFound when the NodeClaim's instance type is no longer among the
// types the cloud provider offers the NodePool, or when none of its offerings matches the NodeClaim's zone and
// capacity type. A reserved NodeClaim also matches on-demand offerings: a reservation can end while the
// instance keeps running on-demand, and that is not drift.
func instanceTypeDrift(nc *karpv1.NodeClaim, its []*cloudprovider.InstanceType) drift {
	name := nc.Labels[corev1.LabelInstanceTypeStable]
	var it *cloudprovider.InstanceType
	for _, t := range its {
		if t.Name == name {
			it = t
			break
		}
	}
	if it == nil {
		return drift{Reason: karpv1.ReasonInstanceTypeNotFound,
			Message: fmt.Sprintf("instance type %q is no longer offered to nodepool %s", name, nc.NodePoolName())}
	}
	zone, capacityType := nc.Labels[corev1.LabelTopologyZone], nc.Labels[karpv1.CapacityTypeLabelKey]
	for _, o := range it.Offerings {
		if zone != "" && o.Zone != zone {
			continue
		}
		if capacityType == "" || o.CapacityType == capacityType ||
			(capacityType == karpv1.CapacityTypeReserved && o.CapacityType == karpv1.CapacityTypeOnDemand) {
			return drift{}
		}
	}
	return drift{Reason: karpv1.ReasonInstanceTypeNotFound,
		Message: fmt.Sprintf("instance type %s has no offering in zone %q with capacity type %q any more", name, zone, capacityType)}
}

// cloudDrift asks the cloud provider whether the instance still matches its node class (image, subnet,
// security groups, ...).
func (c *Controller) cloudDrift(ctx context.Context, nc *karpv1.NodeClaim) (drift, error) {
	reason, err := c.deps.CloudProvider.IsDrifted(ctx, nc)
	if err != nil {
		return drift{}, fmt.Errorf("asking the cloud provider whether nodeclaim %s drifted: %w", nc.Name, err)
	}
	if reason == "" {
		return drift{}, nil
	}
	return drift{
		Reason:  string(reason),
		Message: fmt.Sprintf("the %s cloud provider reports that the instance no longer matches its node class: %s", c.deps.CloudProvider.Name(), reason),
	}, nil
}

// evaluateDrift returns the NodeClaim's drift: the template hash first, then requirements, then the cloud
// provider (only asked when the first two find nothing). node may be nil.
func (c *Controller) evaluateDrift(ctx context.Context, nc *karpv1.NodeClaim, np *karpv1.NodePool, node *corev1.Node) (drift, error) {
	if d := hashDrift(nc, np); d.Reason != "" {
		return d, nil
	}
	if d := requirementsDrift(nodeLabels(nc, node), np); d.Reason != "" {
		return d, nil
	}
	if c.deps.Clock.Since(nc.CreationTimestamp.Time) > instanceTypeCheckAge {
		its, err := c.types.get(ctx, c.deps, np)
		if err != nil {
			return drift{}, fmt.Errorf("listing the instance types of nodepool %s for nodeclaim %s: %w", np.Name, nc.Name, err)
		}
		if d := instanceTypeDrift(nc, its); d.Reason != "" {
			return d, nil
		}
	}
	return c.cloudDrift(ctx, nc)
}

// instanceTypesMaxAge is how long one listing of a NodePool's instance types serves the drift checks of its
// NodeClaims. Every NodeClaim older than instanceTypeCheckAge is checked against them every driftRecheck and at
// each of its changes: at 5,000 such NodeClaims, a listing each (every type's offerings built anew) was a third of
// the controller's CPU while it launched 2,000 more nodes.
const instanceTypesMaxAge = time.Minute

// typesMemo keeps the latest listing of each NodePool's instance types, by NodePool.
type typesMemo struct {
	mu      sync.Mutex
	entries map[string]typesEntry
}

// typesEntry is one listing: of the NodePool at this UID and resource version, made at at.
type typesEntry struct {
	uid, version string
	at           time.Time
	its          []*cloudprovider.InstanceType
}

// get returns the NodePool's instance types, listed anew when the memo has none for this version of the NodePool
// or the one it has is instanceTypesMaxAge old. The types are shared: read only.
func (m *typesMemo) get(ctx context.Context, d deps.Deps, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	now := d.Clock.Now()
	m.mu.Lock()
	e, ok := m.entries[np.Name]
	m.mu.Unlock()
	if ok && e.uid == string(np.UID) && e.version == np.ResourceVersion && now.Sub(e.at) < instanceTypesMaxAge {
		return e.its, nil
	}
	its, err := d.CloudProvider.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]typesEntry{}
	}
	m.entries[np.Name] = typesEntry{uid: string(np.UID), version: np.ResourceVersion, at: now, its: its}
	return its, nil
}
