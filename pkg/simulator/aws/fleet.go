package awssim

import (
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// candidate is one (launch template config, override) pair of a fleet request, resolved.
type candidate struct {
	order    int
	ltSpec   params
	lt       *launchTemplate
	ov       params
	typeName string
	typ      *catalog.InstanceType
	subnet   *subnet
	zone     string
	image    *image
	priority float64
	price    float64
	spot     bool
	// block is true for a fleet of DefaultTargetCapacityType capacity-block.
	block bool
	crID  string
	// crOpen is true when crID is an open reservation the launch matched without naming it: when it is full,
	// the launch goes on as plain on-demand instead of failing.
	crOpen   bool
	errCode  string
	errMsg   string
	launched []string
}

func (c *candidate) fail(code, format string, args ...any) {
	if c.errCode == "" {
		c.errCode, c.errMsg = code, fmt.Sprintf(format, args...)
	}
}

func (s *Simulator) createFleet(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	if t := p.get("Type"); t != "instant" {
		return nil, errInvalidParam("awssim simulates only fleets of Type=instant, got %q", t)
	}
	total, ok := p.intOr("TargetCapacitySpecification.TotalTargetCapacity", 0)
	if !ok || total < 1 {
		return nil, errInvalidParam("TargetCapacitySpecification.TotalTargetCapacity must be a positive integer")
	}
	capType := p.get("TargetCapacitySpecification.DefaultTargetCapacityType")
	switch capType {
	case "spot", "on-demand", "capacity-block":
	case "":
		return nil, errMissingParam("TargetCapacitySpecification.DefaultTargetCapacityType")
	default:
		return nil, errInvalidParam("DefaultTargetCapacityType %q is not simulated (spot, on-demand, capacity-block)", capType)
	}
	configs := p.list("LaunchTemplateConfigs")
	if len(configs) == 0 {
		return nil, errMissingParam("LaunchTemplateConfigs")
	}
	for _, ts := range p.tagSpecs("TagSpecification") {
		switch ts.ResourceType {
		case "instance", "volume", "fleet", "network-interface", "spot-instances-request":
		default:
			return nil, errInvalidParam("TagSpecification resource type %q is not valid for CreateFleet", ts.ResourceType)
		}
	}
	strategy := p.get("OnDemandOptions.AllocationStrategy")
	if capType == "spot" {
		strategy = p.get("SpotOptions.AllocationStrategy")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	fleetID := "fleet-" + strings.TrimPrefix(s.nextIDLocked("x"), "x-")
	var cands []*candidate
	for _, cfg := range configs {
		spec := cfg.sub("LaunchTemplateSpecification")
		ovs := cfg.list("Overrides")
		if len(ovs) == 0 {
			ovs = []params{{}}
		}
		for _, ov := range ovs {
			c := &candidate{order: len(cands), ltSpec: spec, ov: ov, spot: capType == "spot", block: capType == "capacity-block"}
			s.resolveCandidateLocked(a, c)
			cands = append(cands, c)
		}
	}
	viable := make([]*candidate, 0, len(cands))
	for _, c := range cands {
		if c.errCode == "" {
			viable = append(viable, c)
		}
	}
	sort.SliceStable(viable, func(i, j int) bool {
		if strategy == "prioritized" && viable[i].priority != viable[j].priority {
			return viable[i].priority < viable[j].priority
		}
		if viable[i].price != viable[j].price {
			return viable[i].price < viable[j].price
		}
		return viable[i].order < viable[j].order
	})
	reservationID := s.nextIDLocked("r")
	var requestTags []Tag
	for _, ts := range p.tagSpecs("TagSpecification") {
		if ts.ResourceType == "instance" {
			requestTags = append(requestTags, ts.Tags...)
		}
	}
	launched := 0
	for _, c := range viable {
		for launched < total && c.errCode == "" {
			if c.crID != "" {
				cr := a.reservationByID(c.crID)
				if !cr.usable() && c.crOpen {
					c.crID, c.crOpen = "", false
				} else if !cr.usable() {
					c.fail("ReservationCapacityExceeded", "The requested capacity reservation %s has no available capacity", c.crID)
					break
				}
			}
			if c.crID == "" || c.crOpen {
				if code := s.faults.takeCapacity(c.typeName, c.zone, capType); code != "" {
					s.countRefusalLocked(c.typeName, c.zone, capType)
					c.fail(code, "%s", capacityMessage(code, c.typeName, c.zone))
					break
				}
			}
			inst, err := s.launchLocked(a, c, reservationID, append([]Tag{{Key: "aws:ec2:fleet-id", Value: fleetID}}, requestTags...))
			if err != nil {
				c.fail(err.Code, "%s", err.Message)
				break
			}
			c.launched = append(c.launched, inst.ID)
			launched++
		}
		if launched >= total {
			break
		}
	}
	var okItems, errItems []*el
	lifecycle := capType
	for _, c := range cands {
		if len(c.launched) > 0 {
			okItems = append(okItems, E("item", c.overridesXML(), T("lifecycle", lifecycle),
				StrList("instanceIds", "item", c.launched), T("instanceType", c.typeName), T("platform", "")))
		}
		if c.errCode != "" {
			errItems = append(errItems, E("item", c.overridesXML(), T("lifecycle", lifecycle),
				T("errorCode", c.errCode), T("errorMessage", c.errMsg)))
		}
	}
	s.log.Info("CreateFleet", "account", a.key, "fleet", fleetID, "capacity-type", capType, "requested", total,
		"launched", launched, "errors", len(errItems))
	return []*el{T("fleetId", fleetID), List("errorSet", "item", errItems), List("fleetInstanceSet", "item", okItems)}, nil
}

func (c *candidate) overridesXML() *el {
	spec := E("launchTemplateSpecification", TOpt("launchTemplateId", c.ltSpec.get("LaunchTemplateId")),
		TOpt("launchTemplateName", c.ltSpec.get("LaunchTemplateName")), TOpt("version", c.ltSpec.get("Version")))
	if c.lt != nil {
		spec = E("launchTemplateSpecification", T("launchTemplateId", c.lt.ID), T("launchTemplateName", c.lt.Name),
			TOpt("version", c.ltSpec.get("Version")))
	}
	ov := E("overrides", TOpt("instanceType", c.typeName), TOpt("subnetId", c.ov.get("SubnetId")),
		TOpt("availabilityZone", c.zone), TOpt("imageId", c.ov.get("ImageId")))
	if c.subnet != nil && c.ov.get("SubnetId") == "" {
		ov.kids = append(ov.kids, T("subnetId", c.subnet.ID))
	}
	if pr := c.ov.get("Priority"); pr != "" {
		ov.kids = append(ov.kids, T("priority", pr))
	}
	return E("launchTemplateAndOverrides", spec, ov)
}

// resolveCandidateLocked fills a candidate from its launch template and override, recording the first reason
// it cannot launch.
func (s *Simulator) resolveCandidateLocked(a *account, c *candidate) {
	switch {
	case c.lt != nil:
		// Already resolved (RunInstances builds an anonymous template).
	case c.ltSpec.get("LaunchTemplateId") != "":
		c.lt = a.templateByID(c.ltSpec.get("LaunchTemplateId"))
		if c.lt == nil {
			c.fail("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", c.ltSpec.get("LaunchTemplateId"))
			return
		}
	case c.ltSpec.get("LaunchTemplateName") != "":
		c.lt = a.templates[c.ltSpec.get("LaunchTemplateName")]
		if c.lt == nil {
			c.fail("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", c.ltSpec.get("LaunchTemplateName"))
			return
		}
	default:
		c.fail("MissingParameter", "LaunchTemplateSpecification needs LaunchTemplateId or LaunchTemplateName")
		return
	}
	if v := c.ltSpec.get("Version"); v != "" && v != "$Latest" && v != "$Default" && v != "1" {
		c.fail("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s", v)
		return
	}
	if pr := c.ov.get("Priority"); pr != "" {
		c.priority, _ = strconv.ParseFloat(pr, 64)
	}
	c.typeName = c.ov.get("InstanceType")
	if c.typeName == "" {
		c.typeName = c.lt.instanceType()
	}
	if c.typeName == "" {
		c.fail("InvalidParameterValue", "Neither the override nor the launch template names an instance type")
		return
	}
	t, ok := s.cat.Type(c.typeName)
	if !ok {
		c.fail("InvalidParameterValue", "The instance type '%s' does not exist", c.typeName)
		return
	}
	c.typ = t
	switch {
	case c.ov.get("SubnetId") != "":
		c.subnet = a.subnetByID(c.ov.get("SubnetId"))
		if c.subnet == nil {
			c.fail("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", c.ov.get("SubnetId"))
			return
		}
		if az := c.ov.get("AvailabilityZone"); az != "" && az != c.subnet.Zone {
			c.fail("InvalidParameterValue", "Subnet %s is in %s, not in the requested zone %s", c.subnet.ID, c.subnet.Zone, az)
			return
		}
	default:
		az := c.ov.get("AvailabilityZone")
		for _, sn := range a.subnets {
			if az == "" || sn.Zone == az {
				c.subnet = sn
				break
			}
		}
		if c.subnet == nil {
			c.fail("InvalidParameterValue", "No subnet in zone %q", az)
			return
		}
	}
	c.zone = c.subnet.Zone
	imageID := c.ov.get("ImageId")
	if imageID == "" {
		imageID = c.lt.imageID()
	}
	if imageID == "" {
		c.fail("InvalidParameterValue", "Neither the override nor the launch template %s names an ImageId", c.lt.Name)
		return
	}
	c.image = a.imageByID(imageID)
	if c.image == nil {
		c.fail("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", imageID)
		return
	}
	if !contains(t.Architectures, c.image.Arch) {
		c.fail("InvalidParameterValue", "The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.",
			strings.Join(t.Architectures, ","), c.image.Arch)
		return
	}
	if !t.OfferedIn(s.opts.Region, c.zone) {
		c.fail("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", c.typeName, c.zone)
		return
	}
	if c.spot {
		price, ok := s.spotPriceLocked(t, c.zone)
		if !ok {
			c.fail("Unsupported", "Spot is not offered for %s in %s", c.typeName, c.zone)
			return
		}
		c.price = price
		if mp := c.ov.get("MaxPrice"); mp != "" {
			if m, err := strconv.ParseFloat(mp, 64); err == nil && m < price {
				c.fail("SpotMaxPriceTooLow", "Your Spot request price of %s is lower than the minimum required Spot request fulfillment price of %.6f.", mp, price)
				return
			}
		}
	} else {
		price, _ := t.OnDemandPrice(s.opts.Region)
		c.price = price
	}
	id := c.lt.capacityReservationID()
	if id != "" && !c.spot {
		cr := a.reservationByID(id)
		if cr == nil {
			c.fail("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
			return
		}
		if cr.InstanceType != c.typeName || cr.Zone != c.zone {
			c.fail("InvalidParameterValue", "Capacity reservation %s is for %s in %s", id, cr.InstanceType, cr.Zone)
			return
		}
		if block := cr.ReservationType == "capacity-block"; block != c.block {
			c.fail("InvalidParameterCombination", "Capacity reservation %s is of type %s; launch it with DefaultTargetCapacityType %s",
				id, cr.ReservationType, map[bool]string{true: "capacity-block", false: "on-demand"}[block])
			return
		}
		if !cr.usable() {
			c.fail("ReservationCapacityExceeded", "The requested capacity reservation %s has no available capacity", id)
			return
		}
		c.crID = id
		c.price = 0
	} else if c.block {
		c.fail("InvalidParameterCombination", "DefaultTargetCapacityType capacity-block needs a launch template targeting a capacity-block reservation")
		return
	} else if !c.spot && c.lt.capacityReservationPreference() != "none" {
		// An on-demand launch that names no reservation uses an open one matching its type and zone, as EC2 does.
		for _, cr := range a.reservations {
			if cr.MatchCriteria == "open" && cr.ReservationType == "default" && cr.InstanceType == c.typeName && cr.Zone == c.zone && cr.usable() {
				c.crID, c.crOpen = cr.ID, true
				break
			}
		}
	}
	capType := map[bool]string{true: "spot", false: "on-demand"}[c.spot]
	if code := s.faults.capacityFault(c.typeName, c.zone, capType); code != "" && (c.crID == "" || c.crOpen) {
		s.countRefusalLocked(c.typeName, c.zone, capType)
		c.fail(code, "%s", capacityMessage(code, c.typeName, c.zone))
		return
	}
	if !c.subnet.IPv6Native && c.subnet.available() <= 0 {
		c.fail("InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID)
	}
}

func capacityMessage(code, typeName, zone string) string {
	if code != "InsufficientInstanceCapacity" {
		return fmt.Sprintf("Simulated %s for %s in %s.", code, typeName, zone)
	}
	return fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", typeName, zone)
}

// launchLocked creates one pending instance for a resolved candidate.
func (s *Simulator) launchLocked(a *account, c *candidate, reservationID string, extraTags []Tag) (*instance, *apiError) {
	placement, perr := s.placeLocked(a, c.lt, c.zone)
	if perr != nil {
		return nil, perr
	}
	nis := s.interfacesOfLocked(c.lt)
	if err := checkInterfaces(c.typeName, c.typ.NetworkCards(), c.typ.EFAInterfaces(), nis); err != nil {
		return nil, err
	}
	if err := s.checkSubnetFamilyLocked(c, nis); err != nil {
		return nil, err
	}
	var ip netip.Addr
	if !c.subnet.IPv6Native {
		var ok bool
		if ip, ok = c.subnet.allocate(); !ok {
			return nil, errBadRequest("InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID)
		}
	}
	for k := range nis {
		for n := 0; n < nis[k].IPv6PrefixCount; n++ {
			nis[k].IPv6Prefixes = append(nis[k].IPv6Prefixes, c.subnet.allocateIPv6Prefix())
		}
	}
	now := s.clock.Now()
	if c.lt.ID != "" {
		// EC2 names the launch template (one version here) on every instance launched from one.
		extraTags = append([]Tag{{Key: "aws:ec2launchtemplate:id", Value: c.lt.ID}, {Key: "aws:ec2launchtemplate:version", Value: "1"}}, extraTags...)
	}
	inst := &instance{
		ID:                 s.nextIDLocked("i"),
		Type:               c.typeName,
		Zone:               c.zone,
		ZoneID:             c.subnet.ZoneID,
		SubnetID:           c.subnet.ID,
		ImageID:            c.image.ID,
		Arch:               c.image.Arch,
		Spot:               c.spot,
		ReservationID:      reservationID,
		State:              StatePending,
		LaunchTime:         now,
		StateSince:         now,
		Tags:               newTagSet(c.lt.instanceTags(), extraTags),
		UserData:           c.lt.userData(),
		RootGiB:            c.lt.rootVolumeGiB(),
		SecurityGroups:     c.lt.securityGroupIDs(),
		ProfileName:        c.lt.profileName(),
		LaunchTemplateID:   c.lt.ID,
		LaunchTemplateName: c.lt.Name,
		Placement:          placement,
		NetworkInterfaces:  nis,
		CPUNested:          c.lt.Data.get("CpuOptions.NestedVirtualization"),
	}
	if ip.IsValid() {
		b := ip.As4()
		inst.PrivateIP = ip.String()
		inst.PrivateDNS = fmt.Sprintf("ip-%d-%d-%d-%d.%s.compute.internal", b[0], b[1], b[2], b[3], s.opts.Region)
	} else {
		// An IPv6-only subnet names the instance after its id.
		inst.PrivateDNS = resourceName(inst.ID, s.opts.Region)
	}
	if c.subnet.IPv6CIDR.IsValid() && (c.lt.wantsIPv6() || c.subnet.IPv6Native) {
		inst.IPv6Address = c.subnet.allocateIPv6()
	}
	if c.crID != "" {
		inst.CapacityReservationID = c.crID
		a.reservationByID(c.crID).Available--
	}
	a.instances[inst.ID] = inst
	s.noteNodeClaimTagLocked(inst.ID, inst.Tags)
	s.launches = append(s.launches, launch{account: a.key, inst: inst})
	s.log.Info("instance launched", "account", a.key, "instance-id", inst.ID, "type", inst.Type, "zone", inst.Zone,
		"capacity-type", inst.capacityType(), "capacity-reservation-id", inst.CapacityReservationID, "ip", inst.PrivateIP)
	return inst, nil
}

// runInstances launches MinCount..MaxCount instances from a launch template or inline parameters.
func (s *Simulator) runInstances(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	count, ok := p.intOr("MaxCount", 1)
	if !ok || count < 1 {
		return nil, errInvalidParam("MaxCount must be a positive integer")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Inline parameters become an anonymous launch template.
	lt := &launchTemplate{Name: "", Data: params{}}
	if spec := p.sub("LaunchTemplate"); len(spec) > 0 {
		switch {
		case spec.get("LaunchTemplateId") != "":
			lt = a.templateByID(spec.get("LaunchTemplateId"))
		case spec.get("LaunchTemplateName") != "":
			lt = a.templates[spec.get("LaunchTemplateName")]
		}
		if lt == nil {
			return nil, errBadRequest("InvalidLaunchTemplateName.NotFoundException", "The specified launch template does not exist.")
		}
	}
	data := params{}
	for k, v := range lt.Data {
		data[k] = v
	}
	for _, k := range []string{"ImageId", "InstanceType", "UserData", "IamInstanceProfile.Name",
		"Placement.GroupId", "Placement.GroupName", "Placement.PartitionNumber", "Placement.Tenancy"} {
		if v := p.get(k); v != "" {
			data[k] = v
		}
	}
	if ids := p.strings("SecurityGroupId"); len(ids) > 0 {
		for i, id := range ids {
			data[fmt.Sprintf("SecurityGroupId.%d", i+1)] = id
		}
	}
	for k, v := range p.sub("TagSpecification") {
		data["TagSpecification."+k] = v
	}
	subnetID := p.get("SubnetId")
	if nis := p.sub("NetworkInterface"); len(nis) > 0 {
		// Interfaces given with the call replace the template's; the instance's subnet is the first one's.
		for k := range data {
			if strings.HasPrefix(k, "NetworkInterface.") {
				delete(data, k)
			}
		}
		for k, v := range nis {
			data["NetworkInterface."+k] = v
		}
		if subnetID == "" {
			subnetID = p.get("NetworkInterface.1.SubnetId")
		}
	}
	anon := &launchTemplate{ID: lt.ID, Name: lt.Name, Data: data}
	c := &candidate{ltSpec: params{}, lt: anon, ov: params{"SubnetId": subnetID, "AvailabilityZone": p.get("Placement.AvailabilityZone")},
		spot: p.get("InstanceMarketOptions.MarketType") == "spot"}
	s.resolveCandidateLocked(a, c)
	if c.errCode != "" {
		return nil, errBadRequest(c.errCode, "%s", c.errMsg)
	}
	resID := s.nextIDLocked("r")
	var items []*el
	for n := 0; n < count; n++ {
		inst, err := s.launchLocked(a, c, resID, nil)
		if err != nil {
			if n == 0 {
				return nil, err
			}
			break
		}
		items = append(items, s.instanceXML(a, inst))
	}
	return []*el{T("reservationId", resID), T("ownerId", a.number), List("groupSet", "item", nil), List("instancesSet", "item", items)}, nil
}
