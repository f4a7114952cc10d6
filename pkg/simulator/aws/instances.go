package awssim

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Instance states as EC2 names them.
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
)

var stateCodes = map[string]int64{StatePending: 0, StateRunning: 16, StateShuttingDown: 32, StateTerminated: 48,
	"stopping": 64, "stopped": 80}

// instance is a simulated EC2 instance.
type instance struct {
	ID, Type, Zone, ZoneID, SubnetID, ImageID, Arch string
	PrivateIP, PrivateDNS                           string
	Spot                                            bool
	CapacityReservationID                           string
	ReservationID                                   string
	State                                           string
	StateReason                                     string
	LaunchTime, StateSince                          time.Time
	Tags                                            tagSet
	UserData                                        string
	RootGiB                                         int
	SecurityGroups                                  []string
	ProfileName                                     string
	LaunchTemplateID, LaunchTemplateName            string
	// Placement is the instance's placement group, partition and tenancy; NetworkInterfaces its interfaces as the
	// launch template gave them (placementgroups.go).
	Placement         instancePlacement
	NetworkInterfaces []instanceInterface
	// CPUNested is the launch template's CpuOptions.NestedVirtualization (enabled, disabled or empty).
	CPUNested string

	// IPv6Address is the primary interface's IPv6 address ("" without one).
	IPv6Address string
	// terminateAt schedules an out-of-band termination (spot interruption).
	terminateAt time.Time
	// health is the injected status-check state DescribeInstanceStatus reports (nil: every check passes).
	health *instanceHealth
	node   nodeProgress
	// reboots counts the RebootInstances calls the instance took; its Node's boot ID changes with each.
	reboots int
}

// nodeProgress tracks what the lifecycle has done to the instance's Node.
type nodeProgress struct {
	spec *NodeSpec
	// sink is the cluster the Node goes to (chosen with spec, from the user data's API server endpoint) and
	// cluster that cluster's endpoint, for logs ("" for the default cluster).
	sink          NodeSink
	cluster       string
	created       bool
	taintAt       time.Time
	taintRemoved  bool
	deleted       bool
	userDataError string
	// clusterDNS is the cluster DNS address the user data gives the kubelet; joinError says why the instance
	// cannot join the cluster (an IPv6 cluster's instance without an IPv6 address or IPv6 DNS address).
	clusterDNS, joinError string
	// checked says the NoNode faults were consulted (once, when the instance started running); withheld says
	// one of them matched, so the instance never gets a Node.
	checked, withheld bool
	// reboot is the Node's side of the instance's last reboot.
	reboot rebootProgress
}

func (i *instance) capacityType() string {
	if i.Spot {
		return "spot"
	}
	return "on-demand"
}

func (s *Simulator) instanceXML(a *account, i *instance) *el {
	var lifecycle, spotReq, cr, reason *el
	if i.Spot {
		lifecycle = T("instanceLifecycle", "spot")
		spotReq = T("spotInstanceRequestId", "sir-"+strings.TrimPrefix(i.ID, "i-")[:8])
	}
	if i.CapacityReservationID != "" {
		cr = T("capacityReservationId", i.CapacityReservationID)
		if r := a.reservationByID(i.CapacityReservationID); r != nil && r.ReservationType == "capacity-block" {
			lifecycle = T("instanceLifecycle", "capacity-block")
		}
	}
	if i.StateReason != "" {
		reason = E("stateReason", T("code", i.StateReason), T("message", i.StateReason))
	}
	var groups []*el
	for _, id := range i.SecurityGroups {
		name := ""
		if g := a.sgByID(id); g != nil {
			name = g.Name
		}
		groups = append(groups, E("item", T("groupId", id), T("groupName", name)))
	}
	hypervisor := "nitro"
	if t, ok := s.cat.Type(i.Type); ok && t.Hypervisor != "" {
		hypervisor = t.Hypervisor
	}
	var profile *el
	if i.ProfileName != "" {
		profile = E("iamInstanceProfile", T("arn", fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", a.number, i.ProfileName)),
			T("id", "AIPA"+shortHash(i.ProfileName, 17)))
	}
	return E("item", T("instanceId", i.ID), T("imageId", i.ImageID),
		E("instanceState", I("code", stateCodes[i.State]), T("name", i.State)),
		T("privateDnsName", i.PrivateDNS), T("dnsName", ""), T("stateTransitionReason", i.StateReason), I("amiLaunchIndex", 0),
		T("instanceType", i.Type), TS("launchTime", i.LaunchTime),
		i.placementXML(),
		E("monitoring", T("state", "disabled")), T("subnetId", i.SubnetID), T("vpcId", a.vpcID),
		TOpt("privateIpAddress", i.PrivateIP), TOpt("ipv6Address", i.IPv6Address), B("sourceDestCheck", true), List("groupSet", "item", groups),
		reason, T("architecture", i.Arch), T("rootDeviceType", "ebs"), T("rootDeviceName", "/dev/xvda"),
		T("virtualizationType", "hvm"), lifecycle, spotReq, tagSetXML("tagSet", i.Tags), T("hypervisor", hypervisor), profile,
		B("ebsOptimized", true), B("enaSupport", true), cr, T("bootMode", "uefi"), T("platformDetails", "Linux/UNIX"),
		E("metadataOptions", T("state", "applied"), T("httpTokens", "required"), I("httpPutResponseHopLimit", 1), T("httpEndpoint", "enabled")),
		i.privateDNSNameOptionsXML(), i.networkInterfacesXML(a.vpcID), i.cpuOptionsXML())
}

func instanceValues(i *instance, vpc string) valuesFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-id":
			return []string{i.ID}, true
		case "instance-state-name":
			return []string{i.State}, true
		case "instance-state-code":
			return []string{fmt.Sprint(stateCodes[i.State])}, true
		case "instance-type":
			return []string{i.Type}, true
		case "availability-zone":
			return []string{i.Zone}, true
		case "subnet-id":
			return []string{i.SubnetID}, true
		case "vpc-id":
			return []string{vpc}, true
		case "image-id":
			return []string{i.ImageID}, true
		case "private-ip-address":
			if i.PrivateIP == "" {
				return nil, true
			}
			return []string{i.PrivateIP}, true
		case "private-dns-name":
			return []string{i.PrivateDNS}, true
		case "instance-lifecycle":
			if i.Spot {
				return []string{"spot"}, true
			}
			return nil, true
		case "capacity-reservation-id":
			return []string{i.CapacityReservationID}, true
		case "reservation-id":
			return []string{i.ReservationID}, true
		case "architecture":
			return []string{i.Arch}, true
		}
		return nil, false
	}
}

// sortedInstances returns the account's instances ordered by id (ids grow with launch order).
func (a *account) sortedInstances() []*instance {
	out := make([]*instance, 0, len(a.instances))
	for _, i := range a.instances {
		out = append(out, i)
	}
	sort.Slice(out, func(x, y int) bool { return out[x].ID < out[y].ID })
	return out
}

func (s *Simulator) describeInstances(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := p.strings("InstanceId")
	var selected []*instance
	if len(ids) > 0 {
		var missing []string
		young := time.Duration(s.faults.NotFoundAfterLaunch)
		now := s.clock.Now()
		for _, id := range ids {
			i, ok := a.instances[id]
			if !ok || (young > 0 && now.Sub(i.LaunchTime) < young) {
				missing = append(missing, id)
				continue
			}
			selected = append(selected, i)
		}
		if len(missing) > 0 {
			return nil, errBadRequest("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
		}
		if p.has("MaxResults") {
			return nil, errInvalidParam("The parameter instancesSet cannot be used with the parameter maxResults")
		}
	} else {
		selected = a.sortedInstances()
	}
	if err := validateFilters(p.filters(), instanceValues(&instance{}, "")); err != nil {
		return nil, err
	}
	var matched []*instance
	for _, i := range selected {
		ok, err := matchFilters(p.filters(), instanceValues(i, a.vpcID), i.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, i)
		}
	}
	def := len(matched) + 1
	if p.has("MaxResults") {
		if n, ok := p.intOr("MaxResults", 0); !ok || n < 5 || n > 1000 {
			return nil, errInvalidParam("Value ( %s ) for parameter maxResults is invalid. Expecting a value between 5 and 1000", p.get("MaxResults"))
		}
	}
	pageItems, next, err := page(matched, p, def, 0)
	if err != nil {
		return nil, err
	}
	// Group consecutive instances of one reservation.
	var reservations []*el
	for idx := 0; idx < len(pageItems); {
		resID := pageItems[idx].ReservationID
		var items []*el
		for ; idx < len(pageItems) && pageItems[idx].ReservationID == resID; idx++ {
			items = append(items, s.instanceXML(a, pageItems[idx]))
		}
		reservations = append(reservations, E("item", T("reservationId", resID), T("ownerId", a.number),
			List("groupSet", "item", nil), List("instancesSet", "item", items)))
	}
	return []*el{List("reservationSet", "item", reservations), next}, nil
}

func (s *Simulator) terminateInstances(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	ids := p.strings("InstanceId")
	if len(ids) == 0 {
		return nil, errMissingParam("InstanceId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if _, ok := a.instances[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, errBadRequest("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	var items []*el
	for _, id := range ids {
		i := a.instances[id]
		prev := i.State
		s.beginTerminationLocked(i, "Client.UserInitiatedShutdown: User initiated shutdown")
		items = append(items, E("item", T("instanceId", id),
			E("currentState", I("code", stateCodes[i.State]), T("name", i.State)),
			E("previousState", I("code", stateCodes[prev]), T("name", prev))))
	}
	return []*el{List("instancesSet", "item", items)}, nil
}

// beginTerminationLocked moves a pending or running instance to shutting-down.
func (s *Simulator) beginTerminationLocked(i *instance, reason string) bool {
	if i.State != StatePending && i.State != StateRunning {
		return false
	}
	i.State = StateShuttingDown
	i.StateSince = s.clock.Now()
	i.StateReason = reason
	s.log.Info("instance shutting down", "instance-id", i.ID, "reason", reason)
	return true
}

func (s *Simulator) createTags(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	return s.changeTags(a, p, func(ts tagSet, t Tag) { ts[t.Key] = t.Value })
}

func (s *Simulator) deleteTags(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	return s.changeTags(a, p, func(ts tagSet, t Tag) {
		if v, ok := ts[t.Key]; ok && (t.Value == "" || t.Value == v) {
			delete(ts, t.Key)
		}
	})
}

func (s *Simulator) changeTags(a *account, p params, apply func(tagSet, Tag)) ([]*el, *apiError) {
	ids := p.strings("ResourceId")
	if len(ids) == 0 {
		return nil, errMissingParam("ResourceId")
	}
	tags := p.tags("Tag")
	for _, t := range tags {
		if t.Key == "" {
			return nil, errInvalidParam("Tag keys must not be empty")
		}
		if strings.HasPrefix(t.Key, "aws:") {
			return nil, errInvalidParam("Tag keys starting with 'aws:' are reserved for internal use")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var sets []tagSet
	for _, id := range ids {
		ts := a.tagsOf(id)
		if ts == nil {
			prefix, _, _ := strings.Cut(id, "-")
			code := map[string]string{"i": "InvalidInstanceID.NotFound", "lt": "InvalidLaunchTemplateId.NotFound",
				"subnet": "InvalidSubnetID.NotFound", "sg": "InvalidGroup.NotFound", "ami": "InvalidAMIID.NotFound",
				"cr": "InvalidCapacityReservationId.NotFound"}[prefix]
			if code == "" {
				code = "InvalidID"
			}
			return nil, errBadRequest(code, "The ID '%s' does not exist", id)
		}
		sets = append(sets, ts)
	}
	for n, ts := range sets {
		for _, t := range tags {
			apply(ts, t)
		}
		if strings.HasPrefix(ids[n], "i-") {
			s.noteNodeClaimTagLocked(ids[n], ts)
		}
	}
	return []*el{B("return", true)}, nil
}

func (a *account) tagsOf(id string) tagSet {
	if i, ok := a.instances[id]; ok {
		return i.Tags
	}
	if lt := a.templateByID(id); lt != nil {
		return lt.Tags
	}
	if sn := a.subnetByID(id); sn != nil {
		return sn.Tags
	}
	if g := a.sgByID(id); g != nil {
		return g.Tags
	}
	if img := a.imageByID(id); img != nil {
		return img.Tags
	}
	if cr := a.reservationByID(id); cr != nil {
		return cr.Tags
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// privateDNSNameOptionsXML is how the instance's DNS name was formed: after its IPv4 address, or (in an IPv6-only
// subnet, without one) after its id, with an AAAA record.
func (i *instance) privateDNSNameOptionsXML() *el {
	if i.PrivateIP == "" {
		return E("privateDnsNameOptions", T("hostnameType", "resource-name"), B("enableResourceNameDnsARecord", false),
			B("enableResourceNameDnsAAAARecord", true))
	}
	return E("privateDnsNameOptions", T("hostnameType", "ip-name"))
}
