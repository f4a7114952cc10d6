package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
	"github.com/dovetail/dovetail/pkg/providers/aws/launchtemplate"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// Create launches an instance for the NodeClaim: it selects offerings, makes sure the launch templates exist,
// calls CreateFleet and returns the NodeClaim with providerID, imageID, capacity, allocatable and labels set.
// An instance already launched for the NodeClaim (found by its tag) is returned instead, unless ctx says this
// is the NodeClaim's first launch (cloudprovider.WithFirstLaunch), which spares a DescribeInstances call.
func (p *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	// However Create ends, the launch is no longer on its way to the launch window.
	defer p.notices.Arrived(nodeClaim.Name)
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	if err := readyForLaunch(nc); err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(err)
	}
	// Only the instance types the NodeClaim allows: building every type's offerings and allocatable for each
	// launch was most of what a 1,000-node scale-out allocated.
	reqs := karpv1.NodeSelectorRequirements(nodeClaim.Spec.Requirements)
	its, err := p.instanceTypesAllowed(ctx, nc, func(name string) bool {
		return requirements.Allows(reqs, corev1.LabelInstanceTypeStable, name)
	})
	if err != nil {
		return nil, err
	}
	if p.overlay != nil {
		// The NodeClaim carries its NodePool's template labels and karpenter.sh/nodepool.
		if its, err = p.overlay.OverlayInstanceTypes(nodeClaim.Labels, its); err != nil {
			return nil, cloudprovider.NewNodeClassNotReadyError(err)
		}
	}
	// On a first launch there is nothing to adopt: no process launched for this NodeClaim before.
	if !cloudprovider.IsFirstLaunch(ctx) {
		existing, err := p.instances.FindByNodeClaim(ctx, nodeClaim.Name)
		if err != nil {
			return nil, err
		}
		for _, it := range its {
			if existing != nil && it.Name == existing.Type {
				log.FromContext(ctx).Info("adopting the instance already launched for this NodeClaim", "nodeclaim", nodeClaim.Name, "instance-id", existing.ID)
				return p.launchedNodeClaim(nodeClaim, nc, it, existing, existing.ImageID), nil
			}
		}
	}
	its = fitting(its, nodeClaim.Spec.Resources.Requests)
	if pg := p.placementGroup(ctx, nc); pg != nil && pg.Strategy == resolve.PlacementStrategyPartition && placementPartition(pg, reqs) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("NodeClaim %s allows none of the partitions 1-%d of placement group %s",
			nodeClaim.Name, pg.PartitionCount, pg.ID))
	}
	info, err := p.clusterInfo.get(ctx)
	if err != nil {
		return nil, err
	}
	// A reserved launch that finds its reservation full falls back to the next capacity type the NodeClaim
	// allows; each pass rules out at least one reservation, so the passes are bounded by their number.
	for {
		launched, it, imageID, reservation, err := p.launch(ctx, nc, nodeClaim, its, info)
		if reservation != "" && cloudprovider.IsInsufficientCapacity(err) {
			log.FromContext(ctx).Info("capacity reservation is full; trying the next offering", "nodeclaim", nodeClaim.Name,
				"capacity-reservation-id", reservation, "error", err.Error())
			p.reservations.Exhausted(reservation)
			its = p.refreshReservedAvailability(its)
			continue
		}
		if reservation != "" {
			if err != nil {
				p.reservations.Release(reservation)
			} else {
				p.reservations.Launched(reservation)
			}
		}
		if err != nil {
			return nil, err
		}
		log.FromContext(ctx).Info("launched instance", "nodeclaim", nodeClaim.Name, "instance-id", launched.ID,
			"instance-type", launched.Type, "zone", launched.Zone, "capacity-type", launched.CapacityType,
			"capacity-reservation-id", launched.CapacityReservationID)
		return p.launchedNodeClaim(nodeClaim, nc, it, launched, imageID), nil
	}
}

// launch selects offerings among its and launches one instance. For reserved capacity it first claims room in
// one reservation (returned, so the caller can settle the claim) and launches into that reservation only;
// reserved offerings whose reservations have no room left are skipped.
func (p *CloudProvider) launch(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, its []*cloudprovider.InstanceType,
	info ClusterInfo) (*instance.Instance, *cloudprovider.InstanceType, string, string, error) {
	reqs := karpv1.NodeSelectorRequirements(nodeClaim.Spec.Requirements)
	var ct string
	var choices []instance.Choice
	var reservation string
	for {
		var err error
		ct, choices, err = instance.SelectOverrides(instance.SelectInput{
			Requirements: reqs, InstanceTypes: its, Subnets: nc.Status.Subnets, SubnetUsable: p.subnetUsable,
			MinValues: minValues(nodeClaim.Spec.Requirements),
		})
		if err != nil {
			return nil, nil, "", "", cloudprovider.NewInsufficientCapacityError(fmt.Errorf("NodeClaim %s: %w", nodeClaim.Name, err))
		}
		if ct != cloudprovider.CapacityTypeReserved {
			break
		}
		for _, c := range choices {
			if p.reservations.Claim(c.ReservationID) {
				reservation, choices = c.ReservationID, []instance.Choice{c}
				break
			}
		}
		if reservation != "" {
			break
		}
		// Every reservation chosen is full by our count: look again without them.
		for _, c := range choices {
			p.reservations.Exhausted(c.ReservationID)
		}
		its = p.refreshReservedAvailability(its)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	var launched *instance.Instance
	var images map[string]string
	var err error
	for attempt := 0; ; attempt++ {
		var ltByType map[string]string
		ltByType, images, choices, err = p.launchTemplates(ctx, nc, nodeClaim, ct, choices, byName, info)
		if err != nil {
			if reservation != "" {
				p.reservations.Release(reservation)
			}
			return nil, nil, "", "", err
		}
		all := p.cluster.ForInstance(tags.Instance{
			NodePool: nodeClaim.Labels[karpv1.NodePoolLabelKey], NodeClaim: nodeClaim.Name, NodeClass: nc.Name, NodeClassTags: nc.Spec.Tags,
		})
		shared, own := splitInstanceTags(all, nodeClaim.Name)
		name := nodeClaim.Name
		launched, err = p.instances.Launch(ctx, instance.FleetRequest{
			CapacityType: ct, Choices: choices, LaunchTemplates: ltByType, Tags: shared, InstanceTags: own,
			Prioritized: priceOverlaid(choices, byName), Queued: func() { p.notices.Arrived(name) },
		})
		if err == nil {
			break
		}
		if errors.Is(err, instance.ErrLaunchTemplateNotFound) && attempt == 0 {
			log.FromContext(ctx).Info("launch template vanished; recreating", "nodeclaim", nodeClaim.Name)
			p.templates.InvalidateAll()
			continue
		}
		return nil, nil, "", reservation, err
	}
	if pg := p.placementGroup(ctx, nc); pg != nil {
		// CreateFleet does not say where it placed the instance; the launch template pinned the group and partition.
		launched.PlacementGroupID, launched.PlacementPartition = pg.ID, placementPartition(pg, reqs)
	}
	it := byName[launched.Type]
	if it == nil {
		return nil, nil, "", reservation, fmt.Errorf("CreateFleet launched %s (%s), which was not among the offered types", launched.ID, launched.Type)
	}
	return launched, it, images[launched.Type], reservation, nil
}

// refreshReservedAvailability returns its with each reserved offering's availability and room re-read from
// the reservation counts (copies of the instance types that change).
func (p *CloudProvider) refreshReservedAvailability(its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		for j, o := range it.Offerings {
			if o.ReservationID == "" || (o.Available && p.reservations.Available(o.ReservationID) > 0) {
				continue
			}
			if out[i] == it {
				c := *it
				c.Offerings = append([]cloudprovider.Offering(nil), it.Offerings...)
				out[i] = &c
			}
			out[i].Offerings[j].Available = false
			out[i].Offerings[j].ReservationCapacity = 0
		}
	}
	return out
}

// priceOverlaid reports whether a NodeOverlay set the price of any chosen offering: the choices are then in the
// overlaid price order, which CreateFleet must follow rather than the cloud's prices.
func priceOverlaid(choices []instance.Choice, byName map[string]*cloudprovider.InstanceType) bool {
	for _, c := range choices {
		it := byName[c.InstanceType]
		if it == nil {
			continue
		}
		for _, o := range it.Offerings {
			if o.PriceOverlay != "" && o.Zone == c.Zone && o.CapacityType == c.CapacityType {
				return true
			}
		}
	}
	return false
}

// splitInstanceTags separates the tags naming one NodeClaim (karpenter.sh/nodeclaim, and Name while it is the
// NodeClaim's name) from those every NodeClaim of the node class shares, so identical launches can share a fleet.
func splitInstanceTags(all map[string]string, nodeClaim string) (shared, own map[string]string) {
	shared, own = map[string]string{}, map[string]string{}
	for k, v := range all {
		if k == awsv1.TagNodeClaim || (k == awsv1.TagName && v == nodeClaim) {
			own[k] = v
		} else {
			shared[k] = v
		}
	}
	return shared, own
}

// launchedNodeClaim is the NodeClaim Create returns for an instance: provider ID, image, capacity, allocatable,
// the instance type and offering labels, and the node class hash annotations.
func (p *CloudProvider) launchedNodeClaim(nodeClaim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, it *cloudprovider.InstanceType,
	launched *instance.Instance, imageID string) *karpv1.NodeClaim {
	out := nodeClaim.DeepCopy()
	out.Status.ProviderID = launched.ProviderID()
	out.Status.ImageID = imageID
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = NodeClassHash(nc)
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = NodeClassHashVersion
	for k, v := range p.instanceLabels(it.Labels, launched, nc) {
		out.Labels[k] = v
	}
	reqs := karpv1.NodeSelectorRequirements(nodeClaim.Spec.Requirements)
	out.Labels[awsv1.LabelInstanceTenancy] = tenancy(reqs)
	if launched.PlacementGroupID != "" {
		out.Labels[awsv1.LabelPlacementGroupID] = launched.PlacementGroupID
		if launched.PlacementPartition > 0 {
			out.Labels[awsv1.LabelPlacementGroupPartition] = strconv.Itoa(int(launched.PlacementPartition))
		}
	}
	return out
}

// efaCount is how many EFA interfaces a launch template gives instances of it: every EFA the type takes when the
// NodeClaim requests vpc.amazonaws.com/efa and the node class sets no spec.networkInterfaces (which then say it).
func efaCount(nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, it *cloudprovider.InstanceType) int {
	if len(nc.Spec.NetworkInterfaces) > 0 {
		return 0
	}
	if _, ok := nodeClaim.Spec.Resources.Requests[instancetype.ResourceEFA]; !ok {
		return 0
	}
	q := it.Capacity[instancetype.ResourceEFA]
	return int(q.Value())
}

func readyForLaunch(nc *awsv1.EC2NodeClass) error {
	switch {
	case len(nc.Status.Subnets) == 0:
		return fmt.Errorf("EC2NodeClass %q has no resolved subnets", nc.Name)
	case len(nc.Status.SecurityGroups) == 0:
		return fmt.Errorf("EC2NodeClass %q has no resolved security groups", nc.Name)
	case len(nc.Status.AMIs) == 0:
		return fmt.Errorf("EC2NodeClass %q has no resolved AMIs", nc.Name)
	case nc.InstanceProfileName() == "":
		return fmt.Errorf("EC2NodeClass %q has no instance profile yet", nc.Name)
	}
	return nil
}

func (p *CloudProvider) subnetUsable(id string) bool { return !p.unavailable.IsSubnetUnavailable(id) }

// fitting keeps the instance types whose allocatable resources hold the requests.
func fitting(its []*cloudprovider.InstanceType, requests corev1.ResourceList) []*cloudprovider.InstanceType {
	if len(requests) == 0 {
		return its
	}
	var out []*cloudprovider.InstanceType
	for _, it := range its {
		alloc := it.Allocatable()
		ok := true
		for name, q := range requests {
			if a, has := alloc[name]; (!has && !q.IsZero()) || (has && a.Cmp(q) < 0) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, it)
		}
	}
	return out
}

// instanceLabels are the labels a launched NodeClaim carries: its instance type's, and the offering's zone,
// zone id, region and capacity type.
func (p *CloudProvider) instanceLabels(typeLabels map[string]string, inst *instance.Instance, nc *awsv1.EC2NodeClass) map[string]string {
	// Room for the type's labels and what is added here (zone, region, capacity type, the NodePool, a reservation's
	// two, the zone ID): a listing of 5,000 instances spent a third of its conversion growing these maps.
	out := make(map[string]string, len(typeLabels)+8)
	for k, v := range typeLabels {
		out[k] = v
	}
	out[corev1.LabelTopologyZone] = inst.Zone
	out[corev1.LabelTopologyRegion] = p.clients.Region
	out[karpv1.CapacityTypeLabelKey] = inst.CapacityType
	if inst.CapacityReservationID != "" {
		r, ok := reservationOf(nc, inst.CapacityReservationID)
		if !ok {
			r.ReservationType = awsv1.CapacityReservationTypeDefault
		}
		for k, v := range instance.ReservationLabels(inst.CapacityReservationID, string(r.ReservationType), r.Interruptible) {
			out[k] = v
		}
	}
	if nc != nil {
		for _, s := range nc.Status.Subnets {
			if s.Zone == inst.Zone && s.ZoneID != "" {
				out[awsv1.LabelTopologyZoneID] = s.ZoneID
				break
			}
		}
	}
	return out
}

// templateGroup is a set of instance types that share one launch template: same image, max pods and reserved
// resources (the kubelet configuration in the user data must match what the instance type offers).
type templateGroup struct {
	image    string
	maxPods  int64
	reserved string
	efa      int
}

// launchTemplates makes sure a launch template exists for every chosen instance type and returns instance type
// → template name and instance type → image id. Choices without a compatible AMI are dropped.
func (p *CloudProvider) launchTemplates(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, capacityType string,
	choices []instance.Choice, byName map[string]*cloudprovider.InstanceType, info ClusterInfo) (map[string]string, map[string]string, []instance.Choice, error) {
	groups := map[templateGroup][]string{}
	images := map[string]string{}
	for _, c := range choices {
		if _, done := images[c.InstanceType]; done {
			continue
		}
		it := byName[c.InstanceType]
		ami, ok := amiFor(nc.Status.AMIs, it.Labels)
		if !ok {
			continue
		}
		images[c.InstanceType] = ami
		g := templateGroup{image: ami, maxPods: it.Capacity.Pods().Value(), reserved: quantities(it.Overhead.KubeReserved),
			efa: efaCount(nc, nodeClaim, it)}
		groups[g] = append(groups[g], c.InstanceType)
	}
	if len(groups) == 0 {
		return nil, nil, nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no AMI of EC2NodeClass %q is compatible with the %d chosen instance types", nc.Name, len(choices)))
	}
	keys := make([]templateGroup, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	sgs := make([]string, 0, len(nc.Status.SecurityGroups))
	for _, g := range nc.Status.SecurityGroups {
		sgs = append(sgs, g.ID)
	}
	reqs := karpv1.NodeSelectorRequirements(nodeClaim.Spec.Requirements)
	pg := p.placementGroup(ctx, nc)
	ltByType := map[string]string{}
	for _, g := range keys {
		it := byName[groups[g][0]]
		b := p.bootstrap(nc, nodeClaim, capacityType, it, info)
		userData, err := p.userData.render(b)
		if err != nil {
			return nil, nil, nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q user data: %w", nc.Name, err))
		}
		spec := launchtemplate.Spec{
			NodeClass: nc, ImageID: g.image, UserData: userData, SecurityGroupIDs: sgs, InstanceProfile: nc.InstanceProfileName(),
			IPv6:     info.IPv6(),
			EFACount: g.efa,
		}
		if t := tenancy(reqs); t != "default" {
			spec.Tenancy = t
		}
		if pg != nil {
			spec.PlacementGroupID, spec.PlacementPartition = pg.ID, placementPartition(pg, reqs)
		}
		if capacityType == cloudprovider.CapacityTypeReserved && len(choices) > 0 {
			spec.CapacityReservationID = choices[0].ReservationID
			spec.CapacityBlock = choices[0].ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock)
		}
		name, err := p.templates.Ensure(ctx, spec)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, t := range groups[g] {
			ltByType[t] = name
		}
	}
	kept := choices[:0:0]
	for _, c := range choices {
		if _, ok := ltByType[c.InstanceType]; ok {
			kept = append(kept, c)
		}
	}
	return ltByType, images, kept, nil
}

// amiFor returns the first AMI whose requirements the instance type's labels satisfy.
func amiFor(amis []awsv1.AMI, labels map[string]string) (string, bool) {
	for _, a := range amis {
		if requirements.Matches(a.Requirements, labels, nil) {
			return a.ID, true
		}
	}
	return "", false
}

func quantities(l corev1.ResourceList) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		q := l[corev1.ResourceName(k)]
		parts = append(parts, k+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// bootstrap assembles the node bootstrap for one launch template.
func (p *CloudProvider) bootstrap(nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, capacityType string, it *cloudprovider.InstanceType, info ClusterInfo) launchtemplate.Bootstrap {
	family := nc.AMIFamily()
	if family == "" {
		family = awsv1.AMIFamilyCustom
	}
	kc := launchtemplate.KubeletConfig{
		MaxPods:      int32(it.Capacity.Pods().Value()),
		ClusterDNS:   []string{info.ClusterDNS},
		KubeReserved: stringMap(it.Overhead.KubeReserved),
		EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"},
	}
	// A configuration that does not parse never gets here: the node class is not ready (ValidateNodeClass).
	if k, err := nc.Spec.Kubelet.Parse(); err == nil {
		if len(k.ClusterDNS) > 0 {
			kc.ClusterDNS = k.ClusterDNS
		}
		if r := awsv1.StaticReserved(k.SystemReserved); len(r) > 0 {
			kc.SystemReserved = r
		}
		if p.cel != nil && len(awsv1.StaticReserved(k.SystemReserved)) != len(k.SystemReserved) {
			// CEL expressions, evaluated for this instance type when its overhead was computed.
			kc.SystemReserved = stringMap(it.Overhead.SystemReserved)
		}
		for sig, v := range k.EvictionHard {
			kc.EvictionHard[sig] = v
		}
		kc.EvictionSoft = k.EvictionSoft
		if len(k.EvictionSoftGracePeriod) > 0 {
			kc.EvictionSoftGracePeriod = map[string]string{}
			for sig, d := range k.EvictionSoftGracePeriod {
				kc.EvictionSoftGracePeriod[sig] = d.Duration.String()
			}
		}
		kc.EvictionMaxPodGracePeriod = k.EvictionMaxPodGracePeriod
		kc.ImageGCHighThresholdPercent = k.ImageGCHighThresholdPercent
		kc.ImageGCLowThresholdPercent = k.ImageGCLowThresholdPercent
		kc.CPUCFSQuota = k.CPUCFSQuota
		kc.Extra = nc.Spec.Kubelet.Unmodelled()
	}
	taints := []corev1.Taint{karpv1.UnregisteredNoExecuteTaint()}
	taints = append(taints, nodeClaim.Spec.Taints...)
	taints = append(taints, nodeClaim.Spec.StartupTaints...)
	b := launchtemplate.Bootstrap{
		Family: family, ClusterName: p.cluster.Name, Endpoint: info.Endpoint, CABundle: info.CABundle,
		ServiceCIDR: info.ServiceCIDR, Kubelet: kc, Labels: NodeLabels(nodeClaim, capacityType), Taints: taints,
		InstanceStoreRAID0: instanceStoreRAID0(nc),
	}
	if nc.Spec.UserData != nil {
		b.UserData = *nc.Spec.UserData
	}
	if build := awsv1.WindowsBuild(family); build != "" {
		// The Windows kubelet reports its build too; registering it up front keeps the Node matching the
		// NodeClaim's instance type from the first moment.
		b.Labels[corev1.LabelWindowsBuild] = build
	}
	return b
}

func stringMap(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, q := range l {
		out[string(k)] = q.String()
	}
	return out
}

// kubeletLabelDomains are the kubernetes.io domains whose labels a kubelet may set on its own Node.
var kubeletLabelDomains = map[string]bool{
	"kubernetes.io": true, "node.kubernetes.io": true, "topology.kubernetes.io": true,
	"beta.kubernetes.io": true, "failure-domain.beta.kubernetes.io": true,
}

// NodeLabels returns the labels the kubelet registers the Node with: the NodeClaim's labels, the values its
// requirements pin to one value, and the capacity type. Labels a kubelet may not set on itself (other
// kubernetes.io/k8s.io domains, the hostname) are left for the controller to sync after registration.
func NodeLabels(nodeClaim *karpv1.NodeClaim, capacityType string) map[string]string {
	out := map[string]string{}
	for k, v := range requirements.SingleValues(karpv1.NodeSelectorRequirements(nodeClaim.Spec.Requirements)) {
		out[k] = v
	}
	for k, v := range nodeClaim.Labels {
		out[k] = v
	}
	out[karpv1.CapacityTypeLabelKey] = capacityType
	for k := range out {
		if k == corev1.LabelHostname {
			delete(out, k)
			continue
		}
		domain := karpv1.LabelDomain(k)
		if (karpv1.InDomain(domain, karpv1.LabelDomainKubernetes) || karpv1.InDomain(domain, karpv1.LabelDomainK8s)) &&
			!kubeletLabelDomains[domain] && !strings.HasSuffix(domain, ".kubelet.kubernetes.io") && !strings.HasSuffix(domain, ".node.kubernetes.io") {
			delete(out, k)
		}
	}
	return out
}

// nodeClaimFromInstance is the NodeClaim-shaped view of an instance for Get and List. types, when not nil, keeps
// the labels of each instance type met (read only) for the next instances of a listing.
func (p *CloudProvider) nodeClaimFromInstance(ctx context.Context, inst *instance.Instance, types map[string]map[string]string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              inst.Tags[awsv1.TagNodeClaim],
			CreationTimestamp: metav1.NewTime(inst.LaunchTime),
		},
		Status: karpv1.NodeClaimStatus{ProviderID: inst.ProviderID(), ImageID: inst.ImageID},
	}
	if name := inst.Tags[awsv1.TagNodeClass]; name != "" {
		nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: name}
	}
	typeLabels, seen := types[inst.Type]
	if !seen {
		if info, ok, err := p.instanceTypes.Info(ctx, inst.Type); err == nil && ok {
			typeLabels = instancetype.Labels(info, "")
		} else {
			typeLabels = map[string]string{corev1.LabelInstanceTypeStable: inst.Type}
		}
		if types != nil {
			types[inst.Type] = typeLabels
		}
	}
	nc.Labels = p.instanceLabels(typeLabels, inst, nil)
	if np := inst.Tags[awsv1.TagNodePool]; np != "" {
		nc.Labels[karpv1.NodePoolLabelKey] = np
	}
	// An instance EC2 is already terminating is reported as being deleted, so nobody terminates it again.
	if inst.State == string(ec2types.InstanceStateNameShuttingDown) || inst.State == string(ec2types.InstanceStateNameTerminated) {
		now := metav1.NewTime(p.clock.Now())
		nc.DeletionTimestamp = &now
	}
	return nc
}

// minValues returns the largest minValues per requirement key.
func minValues(reqs []karpv1.NodeSelectorRequirementWithMinValues) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		if r.MinValues != nil && *r.MinValues > out[r.Key] {
			out[r.Key] = *r.MinValues
		}
	}
	return out
}

// instanceStoreRAID0 reports whether the node class asks for its instance store disks as one RAID0 array.
func instanceStoreRAID0(nc *awsv1.EC2NodeClass) bool {
	return nc.Spec.InstanceStorePolicy != nil && *nc.Spec.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}
