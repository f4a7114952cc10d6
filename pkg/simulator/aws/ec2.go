package awssim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

const (
	ec2Version = "2016-11-15"
	ec2XMLNS   = "http://ec2.amazonaws.com/doc/2016-11-15/"
)

type ec2Handler func(r *http.Request, a *account, p params) ([]*el, *apiError)

func (s *Simulator) ec2Handlers() map[string]ec2Handler {
	return map[string]ec2Handler{
		"DescribeAvailabilityZones":      s.describeAvailabilityZones,
		"DescribeInstanceTypes":          s.describeInstanceTypes,
		"DescribeInstanceTypeOfferings":  s.describeInstanceTypeOfferings,
		"DescribeSpotPriceHistory":       s.describeSpotPriceHistory,
		"DescribeImages":                 s.describeImages,
		"DescribeSubnets":                s.describeSubnets,
		"DescribeSecurityGroups":         s.describeSecurityGroups,
		"DescribeCapacityReservations":   s.describeCapacityReservations,
		"CancelCapacityReservation":      s.cancelCapacityReservation,
		"CreateLaunchTemplate":           s.createLaunchTemplate,
		"DescribeLaunchTemplates":        s.describeLaunchTemplates,
		"DeleteLaunchTemplate":           s.deleteLaunchTemplate,
		"CreateFleet":                    s.createFleet,
		"RunInstances":                   s.runInstances,
		"DescribeInstances":              s.describeInstances,
		"DescribeNetworkInterfaces":      s.describeNetworkInterfaces,
		"TerminateInstances":             s.terminateInstances,
		"RebootInstances":                s.rebootInstances,
		"CreateTags":                     s.createTags,
		"DeleteTags":                     s.deleteTags,
		"DescribeVpcs":                   s.describeVpcs,
		"DescribeAccountAttributes":      s.describeAccountAttributes,
		"DescribeInstanceStatus":         s.describeInstanceStatus,
		"DescribeRegions":                s.describeRegions,
		"DescribeLaunchTemplateVersions": s.describeLaunchTemplateVersions,
		"CreatePlacementGroup":           s.createPlacementGroup,
		"DescribePlacementGroups":        s.describePlacementGroups,
		"DeletePlacementGroup":           s.deletePlacementGroup,
	}
}

func (s *Simulator) serveEC2(w http.ResponseWriter, r *http.Request, a *account, p params) {
	action := p.get("Action")
	reqID := s.requestID()
	if err := s.applyFaults(r, "ec2", action); err != nil {
		writeEC2Error(w, err, reqID)
		return
	}
	h, ok := s.ec2Handlers()[action]
	// A mutating call is recorded with the resources it names, looked up before the handler changes them.
	var checks []authzCheck
	record := ok && mutating(action)
	if record {
		checks = s.ec2Checks(a, action, p)
	}
	if ok {
		if err := s.authorize(a, "ec2", func() []authzCheck {
			if checks == nil {
				checks = s.ec2Checks(a, action, p)
			}
			return checks
		}); err != nil {
			if record {
				s.recordCall(r, a, "ec2", action, checks, err)
			}
			writeEC2Error(w, err, reqID)
			return
		}
	}
	if !ok {
		s.log.Warn("unsupported EC2 action", "action", action)
		writeEC2Error(w, errBadRequest("InvalidAction", "The action %s is not valid for this web service (awssim does not simulate it)", action), reqID)
		return
	}
	// DryRun: a caller allowed to make the call is told it would have succeeded, and nothing changes (Karpenter
	// validates an EC2NodeClass with dry-run CreateFleet and RunInstances calls).
	if p.get("DryRun") == "true" {
		dryRun := errDryRun()
		if record {
			s.recordCall(r, a, "ec2", action, checks, dryRun)
		}
		writeEC2Error(w, dryRun, reqID)
		return
	}
	body, apiErr := h(r, a, p)
	if record {
		s.recordCall(r, a, "ec2", action, checks, apiErr)
	}
	if apiErr != nil {
		s.log.Debug("EC2 call failed", "action", action, "code", apiErr.Code, "message", apiErr.Message)
		writeEC2Error(w, apiErr, reqID)
		return
	}
	root := E(action+"Response", append([]*el{T("requestId", reqID)}, body...)...)
	writeXML(w, http.StatusOK, renderXML(root, ec2XMLNS))
}

func writeEC2Error(w http.ResponseWriter, e *apiError, reqID string) {
	root := E("Response", E("Errors", E("Error", T("Code", e.Code), T("Message", e.Message))), T("RequestID", reqID))
	writeXML(w, e.Status, renderXML(root, ""))
}

// page cuts items to one page. The token is the offset of the next item.
func page[V any](items []V, p params, def, maxResults int) ([]V, *el, *apiError) {
	limit, ok := p.intOr("MaxResults", def)
	if !ok || limit < 1 || (maxResults > 0 && limit > maxResults) {
		return nil, nil, errInvalidParam("MaxResults must be between 1 and %d, got %q", maxResults, p.get("MaxResults"))
	}
	start := 0
	if tok := p.get("NextToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "awssim-"))
		if err != nil || n < 0 || n > len(items) || !strings.HasPrefix(tok, "awssim-") {
			return nil, nil, errBadRequest("InvalidPaginationToken", "The pagination token %q is invalid", tok)
		}
		start = n
	}
	end := min(start+limit, len(items))
	var next *el
	if end < len(items) {
		next = T("nextToken", fmt.Sprintf("awssim-%d", end))
	}
	return items[start:end], next, nil
}

func (s *Simulator) describeAvailabilityZones(_ *http.Request, _ *account, p params) ([]*el, *apiError) {
	names := map[string]bool{}
	for _, n := range p.strings("ZoneName") {
		names[n] = true
	}
	ids := map[string]bool{}
	for _, n := range p.strings("ZoneId") {
		ids[n] = true
	}
	fs := p.filters()
	var items []*el
	for _, z := range s.zones {
		if len(names) > 0 && !names[z.Name] || len(ids) > 0 && !ids[z.ID] {
			continue
		}
		vals := func(name string) ([]string, bool) {
			switch name {
			case "zone-name":
				return []string{z.Name}, true
			case "zone-id":
				return []string{z.ID}, true
			case "region-name":
				return []string{s.opts.Region}, true
			case "state":
				return []string{"available"}, true
			case "zone-type":
				return []string{"availability-zone"}, true
			case "opt-in-status":
				return []string{"opt-in-not-required"}, true
			case "group-name":
				return []string{s.opts.Region}, true
			}
			return nil, false
		}
		ok, err := matchFilters(fs, vals, nil)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		items = append(items, E("item", T("zoneName", z.Name), T("zoneId", z.ID), T("zoneType", "availability-zone"),
			T("zoneState", "available"), T("regionName", s.opts.Region), T("groupName", s.opts.Region),
			T("optInStatus", "opt-in-not-required"), T("networkBorderGroup", s.opts.Region)))
	}
	return []*el{List("availabilityZoneInfo", "item", items)}, nil
}

func (s *Simulator) describeRegions(_ *http.Request, _ *account, _ params) ([]*el, *apiError) {
	return []*el{List("regionInfo", "item", []*el{E("item", T("regionName", s.opts.Region),
		T("regionEndpoint", "ec2."+s.opts.Region+".amazonaws.com"), T("optInStatus", "opt-in-not-required"))})}, nil
}

func (s *Simulator) describeAccountAttributes(_ *http.Request, _ *account, _ params) ([]*el, *apiError) {
	return []*el{List("accountAttributeSet", "item", []*el{
		E("item", T("attributeName", "supported-platforms"),
			List("attributeValueSet", "item", []*el{E("item", T("attributeValue", "VPC"))})),
	})}, nil
}

func (s *Simulator) describeVpcs(_ *http.Request, a *account, _ params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []*el{List("vpcSet", "item", []*el{E("item", T("vpcId", a.vpcID), T("state", "available"),
		T("cidrBlock", "10.0.0.0/16"), T("ownerId", a.number), B("isDefault", false),
		ipv6Associations(a.vpcIPv6, "vpc", s.opts.Region))})}, nil
}

func (s *Simulator) describeSubnets(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := p.strings("SubnetId")
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for id := range want {
		if a.subnetByID(id) == nil {
			return nil, errBadRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	fs := p.filters()
	var items []*el
	for _, sn := range a.subnets {
		if len(want) > 0 && !want[sn.ID] {
			continue
		}
		vals := func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{sn.ID}, true
			case "availability-zone":
				return []string{sn.Zone}, true
			case "availability-zone-id":
				return []string{sn.ZoneID}, true
			case "vpc-id":
				return []string{a.vpcID}, true
			case "cidr-block", "cidr":
				if sn.IPv6Native {
					return nil, true
				}
				return []string{sn.CIDR.String()}, true
			case "ipv6-native":
				return []string{boolStr(sn.IPv6Native)}, true
			case "ipv6-cidr-block-association.ipv6-cidr-block":
				if sn.IPv6CIDR.IsValid() {
					return []string{sn.IPv6CIDR.String()}, true
				}
				return nil, true
			case "state":
				return []string{"available"}, true
			case "map-public-ip-on-launch":
				return []string{boolStr(sn.MapPublicIP)}, true
			case "owner-id":
				return []string{a.number}, true
			}
			return nil, false
		}
		ok, err := matchFilters(fs, vals, sn.Tags)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		item := E("item", T("subnetId", sn.ID), T("subnetArn", fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", s.opts.Region, a.number, sn.ID)),
			T("state", "available"), T("vpcId", a.vpcID), subnetCIDRXML(sn),
			I("availableIpAddressCount", int64(sn.available())), T("availabilityZone", sn.Zone),
			T("availabilityZoneId", sn.ZoneID), B("defaultForAz", false), B("mapPublicIpOnLaunch", sn.MapPublicIP),
			T("ownerId", a.number), tagSetXML("tagSet", sn.Tags))
		for _, k := range subnetIPv6XML(sn, s.opts.Region) {
			if k != nil {
				item.kids = append(item.kids, k)
			}
		}
		items = append(items, item)
	}
	if err := validateFilters(fs, func(n string) ([]string, bool) {
		return nil, map[string]bool{"subnet-id": true, "availability-zone": true, "availability-zone-id": true, "vpc-id": true,
			"cidr-block": true, "cidr": true, "ipv6-cidr-block-association.ipv6-cidr-block": true, "state": true, "map-public-ip-on-launch": true, "owner-id": true, "ipv6-native": true}[n]
	}); err != nil {
		return nil, err
	}
	return []*el{List("subnetSet", "item", items)}, nil
}

func (a *account) subnetByID(id string) *subnet {
	for _, sn := range a.subnets {
		if sn.ID == id {
			return sn
		}
	}
	return nil
}

func (s *Simulator) describeSecurityGroups(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, id := range p.strings("GroupId") {
		want[id] = true
	}
	names := map[string]bool{}
	for _, n := range p.strings("GroupName") {
		names[n] = true
	}
	for id := range want {
		if a.sgByID(id) == nil {
			return nil, errBadRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	known := map[string]bool{"group-id": true, "group-name": true, "vpc-id": true, "owner-id": true, "description": true}
	if err := validateFilters(p.filters(), func(n string) ([]string, bool) { return nil, known[n] }); err != nil {
		return nil, err
	}
	var items []*el
	for _, g := range a.sgs {
		if len(want) > 0 && !want[g.ID] || len(names) > 0 && !names[g.Name] {
			continue
		}
		vals := func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{g.ID}, true
			case "group-name":
				return []string{g.Name}, true
			case "vpc-id":
				return []string{a.vpcID}, true
			case "owner-id":
				return []string{a.number}, true
			case "description":
				return []string{g.Description}, true
			}
			return nil, false
		}
		ok, err := matchFilters(p.filters(), vals, g.Tags)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		items = append(items, E("item", T("ownerId", a.number), T("groupId", g.ID), T("groupName", g.Name),
			T("groupDescription", g.Description), T("vpcId", a.vpcID), tagSetXML("tagSet", g.Tags)))
	}
	return []*el{List("securityGroupInfo", "item", items)}, nil
}

func (a *account) sgByID(id string) *securityGroup {
	for _, g := range a.sgs {
		if g.ID == id {
			return g
		}
	}
	return nil
}

func (s *Simulator) describeImages(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, id := range p.strings("ImageId") {
		want[id] = true
	}
	for id := range want {
		if a.imageByID(id) == nil {
			return nil, errBadRequest("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
	}
	owners := p.strings("Owner")
	includeDeprecated := p.get("IncludeDeprecated") == "true"
	now := s.clock.Now()
	known := map[string]bool{"name": true, "image-id": true, "architecture": true, "owner-id": true, "owner-alias": true,
		"state": true, "is-public": true, "image-type": true, "virtualization-type": true, "root-device-type": true,
		"description": true}
	if err := validateFilters(p.filters(), func(n string) ([]string, bool) { return nil, known[n] }); err != nil {
		return nil, err
	}
	var matched []*image
	for _, img := range a.images {
		if len(want) > 0 && !want[img.ID] {
			continue
		}
		if len(owners) > 0 && !ownerMatches(owners, img, a) {
			continue
		}
		if len(want) == 0 && !includeDeprecated && !img.Deprecation.IsZero() && !now.Before(img.Deprecation) {
			continue
		}
		vals := func(name string) ([]string, bool) {
			switch name {
			case "name":
				return []string{img.Name}, true
			case "image-id":
				return []string{img.ID}, true
			case "architecture":
				return []string{img.Arch}, true
			case "owner-id":
				return []string{img.OwnerID}, true
			case "owner-alias":
				return []string{img.OwnerAlias}, true
			case "state":
				return []string{"available"}, true
			case "is-public":
				return []string{"true"}, true
			case "image-type":
				return []string{"machine"}, true
			case "virtualization-type":
				return []string{"hvm"}, true
			case "root-device-type":
				return []string{"ebs"}, true
			case "description":
				return []string{img.Description}, true
			}
			return nil, false
		}
		ok, err := matchFilters(p.filters(), vals, img.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, img)
		}
	}
	pageItems, next, err := page(matched, p, 1000, 1000)
	if err != nil {
		return nil, err
	}
	var items []*el
	for _, img := range pageItems {
		items = append(items, E("item", T("imageId", img.ID), T("imageLocation", img.OwnerAlias+"/"+img.Name),
			T("imageState", "available"), T("imageOwnerId", img.OwnerID), TS("creationDate", img.Created),
			B("isPublic", true), T("architecture", img.Arch), T("imageType", "machine"), T("name", img.Name),
			T("description", img.Description), T("imageOwnerAlias", img.OwnerAlias), T("rootDeviceType", "ebs"),
			T("rootDeviceName", "/dev/xvda"), T("virtualizationType", "hvm"), T("hypervisor", "xen"),
			T("platformDetails", "Linux/UNIX"), T("bootMode", "uefi-preferred"),
			TS("deprecationTime", img.Deprecation), tagSetXML("tagSet", img.Tags)))
	}
	return []*el{List("imagesSet", "item", items), next}, nil
}

func ownerMatches(owners []string, img *image, a *account) bool {
	for _, o := range owners {
		switch {
		case o == "amazon" && img.OwnerAlias == "amazon":
			return true
		case o == "self" && img.OwnerID == a.number:
			return true
		case o == img.OwnerID:
			return true
		}
	}
	return false
}

func (a *account) imageByID(id string) *image {
	for _, img := range a.images {
		if img.ID == id {
			return img
		}
	}
	return nil
}

func (s *Simulator) describeCapacityReservations(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, id := range p.strings("CapacityReservationId") {
		want[id] = true
	}
	for id := range want {
		if a.reservationByID(id) == nil {
			return nil, errBadRequest("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
		}
	}
	var matched []*capacityReservation
	for _, cr := range a.reservations {
		if len(want) > 0 && !want[cr.ID] {
			continue
		}
		vals := func(name string) ([]string, bool) {
			switch name {
			case "instance-type":
				return []string{cr.InstanceType}, true
			case "availability-zone":
				return []string{cr.Zone}, true
			case "state":
				return []string{cr.State}, true
			case "owner-id":
				return []string{cr.OwnerID}, true
			case "instance-platform":
				return []string{"Linux/UNIX"}, true
			case "tenancy":
				return []string{"default"}, true
			case "instance-match-criteria":
				return []string{cr.MatchCriteria}, true
			case "reservation-type":
				return []string{cr.ReservationType}, true
			case "interruptible":
				return []string{strconv.FormatBool(cr.Interruptible)}, true
			}
			return nil, false
		}
		ok, err := matchFilters(p.filters(), vals, cr.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, cr)
		}
	}
	pageItems, next, err := page(matched, p, 1000, 1000)
	if err != nil {
		return nil, err
	}
	var items []*el
	for _, cr := range pageItems {
		var end *el
		if !cr.End.IsZero() {
			end = TS("endDate", cr.End)
		}
		items = append(items, E("item", T("capacityReservationId", cr.ID), T("ownerId", cr.OwnerID),
			T("capacityReservationArn", fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", s.opts.Region, cr.OwnerID, cr.ID)),
			T("instanceType", cr.InstanceType), T("instancePlatform", "Linux/UNIX"), T("availabilityZone", cr.Zone),
			T("tenancy", "default"), I("totalInstanceCount", int64(cr.Total)), I("availableInstanceCount", int64(cr.Available)),
			T("state", cr.State), T("instanceMatchCriteria", cr.MatchCriteria), end, T("endDateType", map[bool]string{true: "unlimited", false: "limited"}[cr.End.IsZero()]),
			T("reservationType", cr.ReservationType), T("interruptible", strconv.FormatBool(cr.Interruptible)), tagSetXML("tagSet", cr.Tags)))
	}
	return []*el{List("capacityReservationSet", "item", items), next}, nil
}

func (a *account) reservationByID(id string) *capacityReservation {
	for _, cr := range a.reservations {
		if cr.ID == id {
			return cr
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func writeXML(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
