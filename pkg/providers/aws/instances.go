package aws

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"slices"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
)

// Get returns the NodeClaim-shaped view of the instance with that provider ID, or a NotFoundError when it is
// gone or not this cluster's.
func (p *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNotFoundError(err)
	}
	inst, err := p.instances.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.nodeClaimFromInstance(ctx, inst, nil), nil
}

// List returns every live instance this cluster launched (carrying its identity tag), as NodeClaims. The listing
// also renews the descriptions drift checks compare (driftInstances), so they need no listing of their own.
func (p *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	at := p.clock.Now()
	insts, err := p.instances.List(ctx)
	if err != nil {
		return nil, err
	}
	p.drifted.listedAt(at, insts)
	out := make([]*karpv1.NodeClaim, 0, len(insts))
	// The labels of each instance type, made once a listing (read only: each NodeClaim copies them).
	types := map[string]map[string]string{}
	for _, inst := range insts {
		out = append(out, p.nodeClaimFromInstance(ctx, inst, types))
	}
	return out, nil
}

// Delete terminates the NodeClaim's instance. It returns a NotFoundError once the instance is shutting down,
// terminated, unknown or not this cluster's, so callers can call it until then.
func (p *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	if nodeClaim.Status.ProviderID == "" {
		return cloudprovider.NewNotFoundError(fmt.Errorf("NodeClaim %s has no provider ID", nodeClaim.Name))
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNotFoundError(err)
	}
	if zoneID := nodeClaim.Labels[awsv1.LabelTopologyZoneID]; p.isZoneIDShifted(ctx, zoneID) {
		// As Karpenter: no TerminateInstances into a zone traffic is shifted away from (calls to an impaired zone
		// would only be retried); the termination is tried again, and goes through once the shift ends.
		return fmt.Errorf("instance %s is in zone %s (%s), which traffic is shifted away from: termination waits for the zonal shift to end",
			id, nodeClaim.Labels[corev1.LabelTopologyZone], zoneID)
	}
	if err := p.adoptFor(ctx, nodeClaim, id); err != nil {
		return err
	}
	if p.onTerminationFailure == nil {
		return p.instances.Terminate(ctx, id)
	}
	return p.instances.TerminateReporting(ctx, id, func() {
		zone := nodeClaim.Labels[corev1.LabelTopologyZone]
		if zone == "" {
			zone = instance.ProviderIDZone(nodeClaim.Status.ProviderID)
		}
		p.onTerminationFailure(zone, nodeClaim.Labels[awsv1.LabelTopologyZoneID])
	})
}

var _ cloudprovider.Rebooter = (*CloudProvider)(nil)

// Reboot reboots the NodeClaim's instance in place (node repair with the AWS gate RebootForRepair). As Karpenter, no
// reboot goes into a zone traffic is shifted away from: the call is refused with an error and tried again later.
func (p *CloudProvider) Reboot(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNotFoundError(err)
	}
	if zoneID := nodeClaim.Labels[awsv1.LabelTopologyZoneID]; p.isZoneIDShifted(ctx, zoneID) {
		return fmt.Errorf("instance %s is in zone %s (%s), which traffic is shifted away from: the reboot waits for the zonal shift to end",
			id, nodeClaim.Labels[corev1.LabelTopologyZone], zoneID)
	}
	return p.instances.Reboot(ctx, id)
}

var _ cloudprovider.Adopter = (*CloudProvider)(nil)

// AdoptInstances gives this cluster's identity to the instances the NodeClaims name (status.providerID) that were
// launched without it: by Karpenter, whose instances carry the cluster's name but no cluster UID, or by an older
// release. See instance.Provider.Adopt for the rule; NodeClaims without a provider ID are skipped.
func (p *CloudProvider) AdoptInstances(ctx context.Context, nodeClaims []*karpv1.NodeClaim) (cloudprovider.Adoption, error) {
	claims := map[string]instance.Claim{}
	byID := map[string]string{}
	for _, nc := range nodeClaims {
		id, err := instance.ParseProviderID(nc.Status.ProviderID)
		if err != nil {
			continue
		}
		claims[id] = p.claimOf(ctx, nc)
		byID[id] = nc.Status.ProviderID
	}
	out := cloudprovider.Adoption{Owned: map[string]bool{}, Refused: map[string]string{}}
	if len(claims) == 0 {
		return out, nil
	}
	res, err := p.instances.Adopt(ctx, claims)
	for id := range res.Owned {
		out.Owned[byID[id]] = true
	}
	for _, id := range res.Adopted {
		out.Adopted = append(out.Adopted, byID[id])
	}
	for id, why := range res.Refused {
		out.Refused[byID[id]] = why
	}
	return out, err
}

// adoptFor adopts the NodeClaim's instance unless it is already known to be this cluster's, so that acting on a
// NodeClaim Karpenter launched (terminating it, checking its drift) does not wait for the garbage collector's
// adoption pass. An instance that cannot be adopted is left to the caller's own look-up, which reports it as not
// this cluster's.
func (p *CloudProvider) adoptFor(ctx context.Context, nodeClaim *karpv1.NodeClaim, id string) error {
	if p.instances.KnownOwned(id) {
		return nil
	}
	if _, err := p.instances.Adopt(ctx, map[string]instance.Claim{id: p.claimOf(ctx, nodeClaim)}); err != nil {
		return fmt.Errorf("adopting instance %s of nodeclaim %s: %w", id, nodeClaim.Name, err)
	}
	return nil
}

// TagInstance adds or replaces tags on an instance of this cluster (for example Name=<node name> after the
// node registers). It returns a NotFoundError when the instance is gone or not this cluster's.
func (p *CloudProvider) TagInstance(ctx context.Context, instanceID string, tags map[string]string) error {
	return p.instances.Tag(ctx, instanceID, tags)
}

// IsDrifted reports whether the NodeClaim's instance no longer matches its EC2NodeClass: the class's static
// fields changed since launch (NodeClassHash), its image is no longer among the resolved AMIs, its subnet no
// longer selected, or its security groups differ from the selected ones.
func (p *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return "", err
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", cloudprovider.NewNotFoundError(err)
	}
	if nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == NodeClassHashVersion {
		if h := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]; h != "" && h != NodeClassHash(nc) {
			return karpv1.ReasonNodeClassDrift, nil
		}
	}
	if err := p.adoptFor(ctx, nodeClaim, id); err != nil {
		return "", err
	}
	inst, err := p.drifted.get(ctx, id, p.instances.Get, p.instances.List)
	if err != nil {
		return "", err
	}
	if r := Drift(nc, inst); r != "" {
		return r, nil
	}
	// The group the selector resolves to now, against the one the node was launched into (a group deleted and
	// made again under the same name has a new id).
	var want string
	if pg := p.placementGroup(ctx, nc); pg != nil {
		want = pg.ID
	}
	if nodeClaim.Labels[awsv1.LabelPlacementGroupID] != want {
		return karpv1.ReasonPlacementGroupDrift, nil
	}
	return "", nil
}

// Drift compares an instance with its node class's resolved status, in Karpenter's order: image, security
// groups, subnet, capacity reservation. Unresolved parts of the status never count as drift, except for the
// reservation: an instance running in a reservation the class no longer selects has drifted even when the class
// selects none.
func Drift(nc *awsv1.EC2NodeClass, inst *instance.Instance) cloudprovider.DriftReason {
	if len(nc.Status.AMIs) > 0 && inst.ImageID != "" && !slices.ContainsFunc(nc.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == inst.ImageID }) {
		return karpv1.ReasonAMIDrift
	}
	if len(nc.Status.SecurityGroups) > 0 && len(inst.SecurityGroupIDs) > 0 {
		want := make([]string, 0, len(nc.Status.SecurityGroups))
		for _, g := range nc.Status.SecurityGroups {
			want = append(want, g.ID)
		}
		slices.Sort(want)
		if !slices.Equal(want, inst.SecurityGroupIDs) {
			return karpv1.ReasonSecurityGroupDrift
		}
	}
	if len(nc.Status.Subnets) > 0 && inst.SubnetID != "" && !slices.ContainsFunc(nc.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == inst.SubnetID }) {
		return karpv1.ReasonSubnetDrift
	}
	if inst.CapacityReservationID != "" && !slices.ContainsFunc(nc.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.ID == inst.CapacityReservationID }) {
		return karpv1.ReasonCapacityReservationDrift
	}
	return ""
}

// claimOf is what the NodeClaim says of its instance, for adoption: its name, creation time and whether a Node of
// this cluster carries its provider ID (read from the cache; a failed read counts as no Node).
func (p *CloudProvider) claimOf(ctx context.Context, nc *karpv1.NodeClaim) instance.Claim {
	c := instance.Claim{NodeClaim: nc.Name, Created: nc.CreationTimestamp.Time}
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := p.kube.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node); err == nil {
			c.Registered = node.Spec.ProviderID == nc.Status.ProviderID
		}
	}
	return c
}
