package instance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
)

// Instance is what the provider knows of one EC2 instance.
type Instance struct {
	ID               string
	Type             string
	Zone             string
	SubnetID         string
	ImageID          string
	CapacityType     string
	State            string
	LaunchTime       time.Time
	PrivateDNSName   string
	SecurityGroupIDs []string
	Tags             map[string]string
	// CapacityReservationID is the reservation the instance runs in, if any.
	CapacityReservationID string
	// PlacementGroupID is the placement group the instance runs in, if any, and PlacementPartition its partition
	// in a partition group (0 otherwise).
	PlacementGroupID   string
	PlacementPartition int32
}

// ProviderID returns aws:///<zone>/<id>.
func (i *Instance) ProviderID() string { return fmt.Sprintf("aws:///%s/%s", i.Zone, i.ID) }

// ParseProviderID returns the instance id of an aws:///<zone>/<id> provider ID.
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return "", fmt.Errorf("provider ID %q does not start with aws:///", providerID)
	}
	i := strings.LastIndex(rest, "/")
	id := rest[i+1:]
	if !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("provider ID %q does not end with an instance id", providerID)
	}
	return id, nil
}

// ProviderIDZone is the zone of an aws:///<zone>/<id> provider ID ("" when it has none).
func ProviderIDZone(providerID string) string {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return ""
	}
	zone, _, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return zone
}

// ErrLaunchTemplateNotFound says CreateFleet named a launch template that no longer exists.
var ErrLaunchTemplateNotFound = errors.New("launch template not found")

// Provider launches, describes, tags and terminates instances of one cluster.
type Provider struct {
	ec2         sdk.EC2API
	cluster     tags.Cluster
	unavailable *unavailable.Cache

	clock clock.Clock

	// owned remembers instances seen carrying this cluster's identity (the tag is set at launch and never
	// changed by Dovetail), so Terminate can skip a DescribeInstances call; entries go when the instance is gone.
	// The value is the launch time for instances this provider launched, zero for others.
	mu    sync.Mutex
	owned map[string]time.Time

	batcher *batcher
	// describer merges the look-ups of single instances (Get) made within DefaultDescribeWindow, on the real clock
	// (the window only spaces calls; nothing is decided on it).
	describer *describeBatcher

	// OnLaunchFailure, when set, is called for every error of a CreateFleet answer (one an offering it could not
	// launch). Set it before first use.
	OnLaunchFailure func(LaunchFailure)
}

// LaunchFailure is one error of a CreateFleet answer: the launch's capacity type, the offering's zone and zone ID
// (empty when the error names no override), and the reason (sdk.LaunchFailureReason).
type LaunchFailure struct {
	CapacityType, Zone, ZoneID, Reason string
}

// ConsistencyWindow is how long after a launch EC2 may still answer "instance not found" (its describe calls
// are eventually consistent). Within it such answers are errors to retry, not proof the instance is gone.
const ConsistencyWindow = time.Minute

// NewProvider returns an instance provider; refused offerings are recorded in cache. Identical launches
// arriving within window go out as one CreateFleet call.
func NewProvider(ec2api sdk.EC2API, cluster tags.Cluster, cache *unavailable.Cache, clk clock.Clock, window BatchWindow) *Provider {
	p := &Provider{ec2: ec2api, cluster: cluster, unavailable: cache, clock: clk, owned: map[string]time.Time{}}
	p.batcher = newBatcher(window, p.createFleet)
	p.describer = newDescribeBatcher(DefaultDescribeWindow, ec2api.DescribeInstances)
	return p
}

func (p *Provider) remember(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.owned[id]; !ok {
		p.owned[id] = time.Time{}
	}
}

func (p *Provider) rememberLaunch(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owned[id] = p.clock.Now()
}

// notVisibleYet reports whether a "not found" answer for id may be EC2's eventual consistency: this provider
// launched it less than ConsistencyWindow ago.
func (p *Provider) notVisibleYet(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.owned[id]
	return ok && !t.IsZero() && p.clock.Since(t) < ConsistencyWindow
}

func (p *Provider) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.owned, id)
}

func (p *Provider) knownOwned(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.owned[id]
	return ok
}

// ListPageSize is the MaxResults of each page of a listing of the cluster's instances: EC2's maximum (it takes 5
// to 1,000; without MaxResults it answers with every match at once). A listing then holds one page of decoded
// instances at a time, about 12 KB each with their tags and interfaces, instead of the whole cluster's: 60 MB at
// 5,000 instances.
const ListPageSize = 1000

// liveStates are the instance states List reports.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

// Launch calls CreateFleet, through a batcher that merges identical requests arriving within its window into
// one fleet with their summed capacity: each request gets one of the fleet's instances, tagged with its own
// InstanceTags, or the fleet's error when the fleet ran short. Offerings EC2 refuses for capacity are marked
// unavailable and subnets without addresses too. It returns an InsufficientCapacityError when no instance was
// launched for the request for capacity reasons and ErrLaunchTemplateNotFound (wrapped) when a launch template
// has vanished.
func (p *Provider) Launch(ctx context.Context, r FleetRequest) (*Instance, error) {
	full, err := FleetInput(r)
	if err != nil {
		return nil, err
	}
	shared := full
	if len(r.InstanceTags) > 0 {
		common := r
		common.InstanceTags = nil
		if shared, err = FleetInput(common); err != nil {
			return nil, err
		}
	}
	res := p.batcher.launch(ctx, shared, full, r)
	if res.err != nil {
		if sdk.IsLaunchTemplateNotFound(sdk.ErrorCode(res.err)) {
			return nil, fmt.Errorf("creating fleet: %w: %w", ErrLaunchTemplateNotFound, res.err)
		}
		return nil, sdk.Wrap(res.err, "creating fleet")
	}
	if res.instance == nil {
		return nil, fleetError(res.out, r)
	}
	fi := res.instance
	o := fleetOverride(fi.LaunchTemplateAndOverrides)
	var c Choice
	for _, ch := range r.Choices {
		if ch.InstanceType == o.instanceType && ch.SubnetID == o.subnetID {
			c = ch
			break
		}
	}
	zone := aws.ToString(fi.AvailabilityZone)
	if zone == "" {
		zone = c.Zone
	}
	if zone == "" {
		zone = o.zone
	}
	it := string(fi.InstanceType)
	if it == "" {
		it = o.instanceType
	}
	p.rememberLaunch(res.id)
	instTags := maps.Clone(r.Tags)
	if res.merged && len(r.InstanceTags) > 0 {
		// The merged fleet carried only the tags its requests share; this instance's own go on now. Failing
		// here does not undo the launch: the instance is the request's, and the lifecycle's tagging step names
		// it again once its node registers.
		if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{res.id}, Tags: tags.EC2(r.InstanceTags)}); err != nil {
			if sdk.IsThrottled(err) {
				// Expected under throttling (the SDK has retried already) and repaired by the lifecycle's
				// tagging step: not an error with a stack trace (the throttled e2e scenario logged 11 of these).
				log.FromContext(ctx).V(1).Info("tagging instance of a merged fleet", "instance-id", res.id, "kind", "throttled", "error", err.Error())
			} else {
				log.FromContext(ctx).Error(err, "tagging instance of a merged fleet", "instance-id", res.id)
			}
		} else {
			maps.Copy(instTags, r.InstanceTags)
		}
	} else {
		maps.Copy(instTags, r.InstanceTags)
	}
	inst := &Instance{
		ID: res.id, Type: it, Zone: zone, SubnetID: o.subnetID,
		CapacityType: capacityType(fi.Lifecycle, r.CapacityType), State: "pending", Tags: instTags,
	}
	if inst.CapacityType == cloudprovider.CapacityTypeReserved {
		inst.CapacityReservationID = c.ReservationID
	}
	return inst, nil
}

// createFleet makes one (possibly merged) CreateFleet call and records what its errors say about offerings
// and subnets; reqs are identical but for their own tags, so the first one's choices name the offerings.
func (p *Provider) createFleet(ctx context.Context, in *ec2.CreateFleetInput, reqs []*launchRequest) (*ec2.CreateFleetOutput, error) {
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil {
		return nil, err
	}
	r := reqs[0].r
	byOverride := map[[2]string]Choice{}
	for _, c := range r.Choices {
		byOverride[[2]string{c.InstanceType, c.SubnetID}] = c
	}
	launched := 0
	for _, fi := range out.Instances {
		launched += len(fi.InstanceIds)
	}
	log.FromContext(ctx).V(1).Info("created fleet", "requests", len(reqs), "launched", launched, "errors", len(out.Errors))
	for _, e := range out.Errors {
		code := aws.ToString(e.ErrorCode)
		o := fleetOverride(e.LaunchTemplateAndOverrides)
		c := byOverride[[2]string{o.instanceType, o.subnetID}]
		if c.Zone == "" {
			c.Zone = o.zone
		}
		if p.OnLaunchFailure != nil {
			zone, zoneID := c.Zone, c.ZoneID
			if o.zone != "" {
				zone = o.zone
			}
			p.OnLaunchFailure(LaunchFailure{
				CapacityType: r.CapacityType, Zone: zone, ZoneID: zoneID,
				Reason: sdk.LaunchFailureReason(code, aws.ToString(e.ErrorMessage)),
			})
		}
		switch {
		case sdk.UnavailableOfferingCodes[code]:
			if o.instanceType == "" || c.Zone == "" {
				continue
			}
			p.unavailable.MarkUnavailable(ctx, code, unavailable.Offering{
				InstanceType: o.instanceType, Zone: c.Zone, CapacityType: capacityType(e.Lifecycle, r.CapacityType),
			})
		case code == sdk.SubnetFullCode && o.subnetID != "":
			p.unavailable.MarkSubnetUnavailable(ctx, o.subnetID)
		}
	}
	return out, nil
}

// fleetError is the error of a request the fleet launched no instance for.
func fleetError(out *ec2.CreateFleetOutput, r FleetRequest) error {
	var ltMissing bool
	var messages []string
	for _, e := range out.Errors {
		code := aws.ToString(e.ErrorCode)
		messages = append(messages, code+": "+aws.ToString(e.ErrorMessage))
		if sdk.IsLaunchTemplateNotFound(code) {
			ltMissing = true
		}
	}
	summary := strings.Join(dedupe(messages), "; ")
	if ltMissing {
		return fmt.Errorf("creating fleet: %w: %s", ErrLaunchTemplateNotFound, summary)
	}
	switch {
	case summary == "" && len(out.Instances) > 0:
		summary = "the fleet launched fewer instances than requested and gave no error"
	case summary == "":
		summary = "CreateFleet returned no instance and no error"
	}
	return cloudprovider.NewInsufficientCapacityError(fmt.Errorf("launching %s among %d offerings: %s", r.CapacityType, len(r.Choices), summary))
}

type override struct{ instanceType, subnetID, zone string }

func fleetOverride(l *ec2types.LaunchTemplateAndOverridesResponse) override {
	if l == nil || l.Overrides == nil {
		return override{}
	}
	return override{
		instanceType: string(l.Overrides.InstanceType),
		subnetID:     aws.ToString(l.Overrides.SubnetId),
		zone:         aws.ToString(l.Overrides.AvailabilityZone),
	}
}

func capacityType(l ec2types.InstanceLifecycle, requested string) string {
	switch l {
	case ec2types.InstanceLifecycleSpot:
		return cloudprovider.CapacityTypeSpot
	case ec2types.InstanceLifecycleOnDemand:
		if requested == cloudprovider.CapacityTypeReserved {
			return requested
		}
		return cloudprovider.CapacityTypeOnDemand
	}
	return requested
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// FindByNodeClaim returns a pending or running instance of this cluster launched for the named NodeClaim, or
// nil. Create uses it so a NodeClaim whose launch was not recorded (the status write failed) does not get a
// second instance.
func (p *Provider) FindByNodeClaim(ctx context.Context, nodeClaim string) (*Instance, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagNodeClaim), Values: []string{nodeClaim}},
		{Name: aws.String("tag:" + tags.ClusterUID), Values: []string{p.cluster.UID}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		return nil, sdk.Wrap(err, "looking up instances of NodeClaim %s", nodeClaim)
	}
	var found []*Instance
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			inst := convert(i)
			if p.cluster.Owner(inst.Tags) == tags.Owned && inst.Tags[awsv1.TagNodeClaim] == nodeClaim {
				found = append(found, inst)
			}
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].LaunchTime.Before(found[j].LaunchTime) })
	p.remember(found[0].ID)
	return found[0], nil
}

// Get describes one instance (in a DescribeInstances call shared with the look-ups made at the same moment). It
// returns a NotFoundError when EC2 does not know it, when it is terminated, or when it does not carry this
// cluster's identity (another cluster's instance is never reported as ours).
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) {
	out, err := p.describer.describe(ctx, id)
	if err != nil {
		if sdk.IsNotFound(err) {
			if p.notVisibleYet(id) {
				return nil, fmt.Errorf("instance %s was launched less than %s ago and is not visible yet: %w", id, ConsistencyWindow, err)
			}
			p.forget(id)
			return nil, cloudprovider.NewNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		return nil, sdk.Wrap(err, "describing instance %s", id)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if aws.ToString(i.InstanceId) != id {
				continue
			}
			inst := convert(i)
			if inst.State == string(ec2types.InstanceStateNameTerminated) {
				p.forget(id)
				return nil, cloudprovider.NewNotFoundError(fmt.Errorf("instance %s is terminated", id))
			}
			if o := p.cluster.Owner(inst.Tags); o != tags.Owned {
				log.FromContext(ctx).Info("instance does not carry this cluster's identity; not acting on it",
					"instance-id", id, "ownership", ownershipName(o))
				return nil, cloudprovider.NewNotFoundError(fmt.Errorf("instance %s (%s): %w", id, ownershipName(o), cloudprovider.ErrNotOwned))
			}
			p.remember(id)
			return inst, nil
		}
	}
	return nil, cloudprovider.NewNotFoundError(fmt.Errorf("instance %s not found", id))
}

// List returns every live instance launched by this cluster for a NodePool. Instances tagged with the cluster
// name but without this cluster's identity are left out and logged.
func (p *Provider) List(ctx context.Context) ([]*Instance, error) {
	in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{p.cluster.ClusterTag()}},
		{Name: aws.String("tag-key"), Values: []string{awsv1.TagNodePool}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}, MaxResults: aws.Int32(ListPageSize)}
	var out []*Instance
	err := EachListed(ctx, p.ec2, in, func(i ec2types.Instance) {
		inst := convert(i)
		switch o := p.cluster.Owner(inst.Tags); o {
		case tags.Owned:
			p.remember(inst.ID)
			out = append(out, inst)
		case tags.NameOnly:
			log.FromContext(ctx).Info("instance tagged with this cluster's name lacks its identity tag; leaving it alone",
				"instance-id", inst.ID, "tag", tags.ClusterUID)
		default:
			log.FromContext(ctx).V(1).Info("instance belongs to another cluster with the same name; ignoring",
				"instance-id", inst.ID, "ownership", ownershipName(o))
		}
	})
	if err != nil {
		return nil, sdk.Wrap(err, "listing instances")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Terminate terminates the instance if it is owned by this cluster. It returns nil when it started the
// termination and a NotFoundError once the instance is shutting down, terminated, unknown or not this cluster's.
// Ownership is checked with DescribeInstances unless the instance was already seen carrying this cluster's UID.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	return p.TerminateReporting(ctx, id, nil)
}

// TerminateReporting is Terminate, calling failed (when set) if the TerminateInstances call itself fails, whatever
// the error (an instance EC2 does not know yet among them).
func (p *Provider) TerminateReporting(ctx context.Context, id string, failed func()) error {
	if !p.knownOwned(id) {
		inst, err := p.Get(ctx, id)
		if err != nil {
			return err
		}
		if inst.State == string(ec2types.InstanceStateNameShuttingDown) {
			p.forget(id)
			return cloudprovider.NewNotFoundError(fmt.Errorf("instance %s is shutting down", id))
		}
	}
	out, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if failed != nil {
			failed()
		}
		if sdk.IsNotFound(err) {
			if p.notVisibleYet(id) {
				return fmt.Errorf("instance %s was launched less than %s ago and is not visible yet: %w", id, ConsistencyWindow, err)
			}
			p.forget(id)
			return cloudprovider.NewNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		return sdk.Wrap(err, "terminating instance %s", id)
	}
	for _, c := range out.TerminatingInstances {
		if aws.ToString(c.InstanceId) != id || c.PreviousState == nil {
			continue
		}
		switch c.PreviousState.Name {
		case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
			// Going or gone: later calls describe it (and get NotFound) instead of keeping an entry forever.
			p.forget(id)
			return cloudprovider.NewNotFoundError(fmt.Errorf("instance %s is already %s", id, c.PreviousState.Name))
		}
	}
	log.FromContext(ctx).Info("terminating instance", "instance-id", id)
	return nil
}

// Reboot reboots the instance in place (ec2:RebootInstances). It returns a NotFoundError when EC2 does not know
// the instance and a RebootRefusedError when the call is not authorized (retrying cannot help); other errors may be
// retried. EC2 takes no client token for a reboot: the caller makes sure it asks once.
func (p *Provider) Reboot(ctx context.Context, id string) error {
	if _, err := p.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}}); err != nil {
		if sdk.IsNotFound(err) {
			return cloudprovider.NewNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		if deniedCodes[sdk.ErrorCode(err)] {
			return &cloudprovider.RebootRefusedError{Err: sdk.Wrap(err, "rebooting instance %s", id)}
		}
		return sdk.Wrap(err, "rebooting instance %s", id)
	}
	log.FromContext(ctx).Info("rebooting instance", "instance-id", id)
	return nil
}

// Tag adds or replaces tags on an instance owned by this cluster (for example Name=<node name> after
// registration). Keys that carry cluster identity cannot be changed this way.
func (p *Provider) Tag(ctx context.Context, id string, t map[string]string) error {
	for k := range t {
		if k == tags.ClusterUID || k == p.cluster.ClusterTag() {
			return fmt.Errorf("tag %q identifies the cluster and cannot be changed", k)
		}
	}
	// An instance known as this cluster's (launched or seen by this provider) is tagged without a look-up: the
	// registration of every node tagged its instance, and described it first, once per node launched.
	if !p.knownOwned(id) {
		if _, err := p.Get(ctx, id); err != nil {
			return err
		}
	}
	_, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags.EC2(t)})
	if err != nil && sdk.IsNotFound(err) {
		return cloudprovider.NewNotFoundError(fmt.Errorf("tagging instance %s: %w", id, err))
	}
	return sdk.Wrap(err, "tagging instance %s", id)
}

func ownershipName(o tags.Ownership) string {
	switch o {
	case tags.Owned:
		return "owned"
	case tags.NameOnly:
		return "cluster-name-only"
	case tags.OtherCluster:
		return "other-cluster"
	}
	return "foreign"
}

func convert(i ec2types.Instance) *Instance {
	inst := &Instance{
		ID:             aws.ToString(i.InstanceId),
		Type:           string(i.InstanceType),
		SubnetID:       aws.ToString(i.SubnetId),
		ImageID:        aws.ToString(i.ImageId),
		PrivateDNSName: aws.ToString(i.PrivateDnsName),
		LaunchTime:     aws.ToTime(i.LaunchTime),
		Tags:           tags.FromEC2(i.Tags),
		CapacityType:   cloudprovider.CapacityTypeOnDemand,
	}
	if i.Placement != nil {
		inst.Zone = aws.ToString(i.Placement.AvailabilityZone)
		inst.PlacementGroupID = aws.ToString(i.Placement.GroupId)
		inst.PlacementPartition = aws.ToInt32(i.Placement.PartitionNumber)
	}
	if i.State != nil {
		inst.State = string(i.State.Name)
	}
	switch {
	case i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot:
		inst.CapacityType = cloudprovider.CapacityTypeSpot
	case i.CapacityReservationId != nil:
		inst.CapacityType = cloudprovider.CapacityTypeReserved
		inst.CapacityReservationID = aws.ToString(i.CapacityReservationId)
	}
	for _, g := range i.SecurityGroups {
		inst.SecurityGroupIDs = append(inst.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	sort.Strings(inst.SecurityGroupIDs)
	return inst
}
