package awssim

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
)

// placementGroup is an EC2 placement group. A cluster group is pinned to the zone of its first instance.
type placementGroup struct {
	ID, Name, Strategy, SpreadLevel string
	PartitionCount                  int
	Tags                            tagSet
	zone                            string
}

// instancePlacement is where an instance was placed: its group (empty for none), partition (0 for none) and
// tenancy (default or dedicated).
type instancePlacement struct {
	GroupID, GroupName string
	Partition          int
	Tenancy            string
}

// instanceInterface is one network interface of an instance as its launch template described it.
type instanceInterface struct {
	ID                     string
	CardIndex, DeviceIndex int
	Type                   string
	IPv4Prefixes           int
	// IPv6PrefixCount is the template's Ipv6PrefixCount; IPv6Prefixes the /80 prefixes delegated at launch.
	IPv6PrefixCount       int
	IPv6Prefixes          []string
	TCPEstablishedTimeout int
	UDPStreamTimeout      int
	UDPTimeout            int
}

// spreadLimitPerZone is how many running instances a rack-level spread group takes per zone.
const spreadLimitPerZone = 7

var placementGroupNameRE = regexp.MustCompile(`^[\x20-\x7e]{1,255}$`)

func (a *account) placementGroupByID(id string) *placementGroup {
	for _, g := range a.placementGroups {
		if g.ID == id {
			return g
		}
	}
	return nil
}

func (s *Simulator) createPlacementGroup(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	name := p.get("GroupName")
	if name == "" {
		return nil, errMissingParam("GroupName")
	}
	if !placementGroupNameRE.MatchString(name) {
		return nil, errInvalidParam("GroupName %q is not 1 to 255 ASCII characters", name)
	}
	strategy := p.get("Strategy")
	switch strategy {
	case "cluster", "partition", "spread":
	case "":
		return nil, errMissingParam("Strategy")
	default:
		return nil, errInvalidParam("Value (%s) for parameter strategy is invalid. Valid values: cluster, spread, partition", strategy)
	}
	g := &placementGroup{Name: name, Strategy: strategy, Tags: newTagSet()}
	if strategy == "partition" {
		n, ok := p.intOr("PartitionCount", 2)
		if !ok || n < 1 || n > 7 {
			return nil, errInvalidParam("PartitionCount must be between 1 and 7")
		}
		g.PartitionCount = n
	} else if p.has("PartitionCount") {
		return nil, errBadRequest("InvalidParameterCombination", "PartitionCount is only valid for the partition strategy")
	}
	if strategy == "spread" {
		g.SpreadLevel = p.get("SpreadLevel")
		if g.SpreadLevel == "" {
			g.SpreadLevel = "rack"
		}
		if g.SpreadLevel != "rack" && g.SpreadLevel != "host" {
			return nil, errInvalidParam("SpreadLevel %q is not rack or host", g.SpreadLevel)
		}
	}
	for _, ts := range p.tagSpecs("TagSpecification") {
		if ts.ResourceType == "placement-group" {
			g.Tags = newTagSet(g.Tags.list(), ts.Tags)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.placementGroups == nil {
		a.placementGroups = map[string]*placementGroup{}
	}
	if _, dup := a.placementGroups[name]; dup {
		return nil, errBadRequest("InvalidPlacementGroup.Duplicate", "The Placement Group '%s' already exists.", name)
	}
	g.ID = "pg-" + s.nextIDLocked("x")[2:]
	a.placementGroups[name] = g
	return []*el{s.placementGroupXML(a, g)}, nil
}

func (s *Simulator) placementGroupXML(a *account, g *placementGroup) *el {
	var partitions, spread *el
	if g.Strategy == "partition" {
		partitions = I("partitionCount", int64(g.PartitionCount))
	}
	if g.SpreadLevel != "" {
		spread = T("spreadLevel", g.SpreadLevel)
	}
	return E("placementGroup", T("groupName", g.Name), T("state", "available"), T("strategy", g.Strategy), partitions,
		T("groupId", g.ID), tagSetXML("tagSet", g.Tags),
		T("groupArn", fmt.Sprintf("arn:aws:ec2:%s:%s:placement-group/%s", s.opts.Region, a.number, g.Name)), spread)
}

func (s *Simulator) describePlacementGroups(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var picked []*placementGroup
	names, ids := p.strings("GroupName"), p.strings("GroupId")
	for _, n := range names {
		g := a.placementGroups[n]
		if g == nil {
			return nil, errBadRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", n)
		}
		picked = append(picked, g)
	}
	for _, id := range ids {
		g := a.placementGroupByID(id)
		if g == nil {
			return nil, errBadRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", id)
		}
		picked = append(picked, g)
	}
	if len(names) == 0 && len(ids) == 0 {
		for _, g := range a.placementGroups {
			picked = append(picked, g)
		}
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].Name < picked[j].Name })
	var items []*el
	for _, g := range picked {
		vals := func(name string) ([]string, bool) {
			switch name {
			case "group-name":
				return []string{g.Name}, true
			case "group-arn":
				return []string{fmt.Sprintf("arn:aws:ec2:%s:%s:placement-group/%s", s.opts.Region, a.number, g.Name)}, true
			case "state":
				return []string{"available"}, true
			case "strategy":
				return []string{g.Strategy}, true
			case "spread-level":
				return []string{g.SpreadLevel}, true
			}
			return nil, false
		}
		ok, err := matchFilters(p.filters(), vals, g.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			item := s.placementGroupXML(a, g)
			item.name = "item"
			items = append(items, item)
		}
	}
	return []*el{List("placementGroupSet", "item", items)}, nil
}

func (s *Simulator) deletePlacementGroup(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	name := p.get("GroupName")
	if name == "" {
		return nil, errMissingParam("GroupName")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := a.placementGroups[name]
	if g == nil {
		return nil, errBadRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
	}
	for _, i := range a.instances {
		if i.Placement.GroupID == g.ID && i.State != StateTerminated {
			return nil, errBadRequest("InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted.", name)
		}
	}
	delete(a.placementGroups, name)
	return []*el{B("return", true)}, nil
}

// placeLocked decides the placement of an instance launched from lt in zone: its group (by the template's
// Placement.GroupId or GroupName), partition (the template's, else the emptiest) and tenancy. A cluster group
// takes instances in one zone only.
func (s *Simulator) placeLocked(a *account, lt *launchTemplate, zone string) (instancePlacement, *apiError) {
	out := instancePlacement{Tenancy: lt.Data.get("Placement.Tenancy")}
	if out.Tenancy == "" {
		out.Tenancy = "default"
	}
	if out.Tenancy != "default" && out.Tenancy != "dedicated" {
		return out, errInvalidParam("Tenancy %q is not simulated (default, dedicated)", out.Tenancy)
	}
	var g *placementGroup
	switch id, name := lt.Data.get("Placement.GroupId"), lt.Data.get("Placement.GroupName"); {
	case id != "":
		if g = a.placementGroupByID(id); g == nil {
			return out, errBadRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", id)
		}
	case name != "":
		if g = a.placementGroups[name]; g == nil {
			return out, errBadRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
		}
	default:
		return out, nil
	}
	out.GroupID, out.GroupName = g.ID, g.Name
	counts := map[int]int{}
	inZone := 0
	for _, i := range a.instances {
		if i.Placement.GroupID != g.ID || i.State == StateTerminated {
			continue
		}
		counts[i.Placement.Partition]++
		if i.Zone == zone {
			inZone++
		}
		if g.Strategy == "cluster" && g.zone == "" {
			g.zone = i.Zone
		}
	}
	switch g.Strategy {
	case "spread":
		if g.SpreadLevel != "host" && inZone >= spreadLimitPerZone {
			return out, errBadRequest("InsufficientInstanceCapacity", "You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone.")
		}
	case "cluster":
		if g.zone != "" && g.zone != zone {
			return out, errBadRequest("InvalidPlacementGroup.InUse", "The placement group '%s' is in use in another availability zone: %s", g.Name, g.zone)
		}
		g.zone = zone
	case "partition":
		if v := lt.Data.get("Placement.PartitionNumber"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > g.PartitionCount {
				return out, errInvalidParam("PartitionNumber %s is not between 1 and %d, the partitions of %s", v, g.PartitionCount, g.Name)
			}
			out.Partition = n
			break
		}
		out.Partition = 1
		for n := 2; n <= g.PartitionCount; n++ {
			if counts[n] < counts[out.Partition] {
				out.Partition = n
			}
		}
	}
	return out, nil
}

// checkInterfaces refuses interfaces the instance type cannot take: a network card or device index it does
// not have, or EFA on a type without EFA (or more efa-only interfaces than it takes).
func checkInterfaces(typeName string, cards []int, maxEFA int, nis []instanceInterface) *apiError {
	efa := 0
	for _, ni := range nis {
		if ni.CardIndex >= len(cards) || ni.DeviceIndex >= cards[ni.CardIndex] {
			return errInvalidParam("Network interface at card %d, device %d is not supported by %s (%d network cards)", ni.CardIndex, ni.DeviceIndex, typeName, len(cards))
		}
		switch ni.Type {
		case "interface":
		case "efa", "efa-only":
			efa++
		default:
			return errInvalidParam("InterfaceType %q is not one of interface, efa, efa-only", ni.Type)
		}
	}
	if efa > maxEFA {
		return errBadRequest("InvalidParameterCombination", "%s supports %d EFA interfaces; %d were requested", typeName, maxEFA, efa)
	}
	return nil
}

// interfacesOf returns the network interfaces an instance launched from lt has: the template's, or one primary
// interface.
func (s *Simulator) interfacesOfLocked(lt *launchTemplate) []instanceInterface {
	nis := lt.Data.list("NetworkInterface")
	if len(nis) == 0 {
		return []instanceInterface{{ID: s.nextIDLocked("eni"), Type: "interface"}}
	}
	out := make([]instanceInterface, 0, len(nis))
	for _, ni := range nis {
		card, _ := ni.intOr("NetworkCardIndex", 0)
		dev, _ := ni.intOr("DeviceIndex", 0)
		prefixes, _ := ni.intOr("Ipv4PrefixCount", 0)
		prefixes6, _ := ni.intOr("Ipv6PrefixCount", 0)
		tcp, _ := ni.intOr("ConnectionTrackingSpecification.TcpEstablishedTimeout", 0)
		udpStream, _ := ni.intOr("ConnectionTrackingSpecification.UdpStreamTimeout", 0)
		udp, _ := ni.intOr("ConnectionTrackingSpecification.UdpTimeout", 0)
		typ := ni.get("InterfaceType")
		if typ == "" {
			typ = "interface"
		}
		out = append(out, instanceInterface{ID: s.nextIDLocked("eni"), CardIndex: card, DeviceIndex: dev, Type: typ,
			IPv4Prefixes: prefixes, IPv6PrefixCount: prefixes6, TCPEstablishedTimeout: tcp, UDPStreamTimeout: udpStream, UDPTimeout: udp})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CardIndex != out[j].CardIndex {
			return out[i].CardIndex < out[j].CardIndex
		}
		return out[i].DeviceIndex < out[j].DeviceIndex
	})
	return out
}

func (i *instance) placementXML() *el {
	var partition *el
	if i.Placement.Partition > 0 {
		partition = I("partitionNumber", int64(i.Placement.Partition))
	}
	var groupID *el
	if i.Placement.GroupID != "" {
		groupID = T("groupId", i.Placement.GroupID)
	}
	tenancy := i.Placement.Tenancy
	if tenancy == "" {
		tenancy = "default"
	}
	return E("placement", T("availabilityZone", i.Zone), T("availabilityZoneId", i.ZoneID), T("groupName", i.Placement.GroupName),
		groupID, partition, T("tenancy", tenancy))
}

func (i *instance) networkInterfacesXML(vpc string) *el {
	if len(i.NetworkInterfaces) == 0 {
		return nil
	}
	items := make([]*el, 0, len(i.NetworkInterfaces))
	for n := range i.NetworkInterfaces {
		items = append(items, i.interfaceXML(n, vpc, nil))
	}
	return List("networkInterfaceSet", "item", items)
}

// interfaceXML is the n-th network interface of the instance as DescribeInstances (extra nil) and
// DescribeNetworkInterfaces (extra: the fields only it reports) describe it.
func (i *instance) interfaceXML(n int, vpc string, extra []*el) *el {
	ni := i.NetworkInterfaces[n]
	var ip, ip6, prefixes, prefixes6, conntrack *el
	if ni.Type != "efa-only" && n == 0 {
		ip = TOpt("privateIpAddress", i.PrivateIP)
		if i.IPv6Address != "" {
			ip6 = List("ipv6AddressesSet", "item", []*el{E("item", T("ipv6Address", i.IPv6Address), B("isPrimaryIpv6", true))})
		}
	}
	if len(ni.IPv6Prefixes) > 0 {
		ps := make([]*el, 0, len(ni.IPv6Prefixes))
		for _, p := range ni.IPv6Prefixes {
			ps = append(ps, E("item", T("ipv6Prefix", p)))
		}
		prefixes6 = List("ipv6PrefixSet", "item", ps)
	}
	if ni.IPv4Prefixes > 0 {
		ps := make([]*el, 0, ni.IPv4Prefixes)
		for k := 0; k < ni.IPv4Prefixes; k++ {
			ps = append(ps, E("item", T("ipv4Prefix", fmt.Sprintf("10.%d.%d.%d/28", 200+n, k/16, (k%16)*16))))
		}
		prefixes = List("ipv4PrefixSet", "item", ps)
	}
	if ni.TCPEstablishedTimeout+ni.UDPStreamTimeout+ni.UDPTimeout > 0 {
		var tcp, udpStream, udp *el
		if ni.TCPEstablishedTimeout > 0 {
			tcp = I("tcpEstablishedTimeout", int64(ni.TCPEstablishedTimeout))
		}
		if ni.UDPStreamTimeout > 0 {
			udpStream = I("udpStreamTimeout", int64(ni.UDPStreamTimeout))
		}
		if ni.UDPTimeout > 0 {
			udp = I("udpTimeout", int64(ni.UDPTimeout))
		}
		conntrack = E("connectionTrackingConfiguration", tcp, udpStream, udp)
	}
	var instanceID *el
	if extra != nil {
		instanceID = T("instanceId", i.ID)
	}
	kids := []*el{T("networkInterfaceId", ni.ID), T("subnetId", i.SubnetID), T("vpcId", vpc),
		T("status", "in-use"), ip, T("interfaceType", ni.Type),
		E("attachment", T("attachmentId", "eni-attach-"+ni.ID[4:]), instanceID, I("deviceIndex", int64(ni.DeviceIndex)),
			I("networkCardIndex", int64(ni.CardIndex)), T("status", "attached"), B("deleteOnTermination", true)),
		ip6, prefixes, prefixes6, conntrack}
	return E("item", append(kids, extra...)...)
}

func (i *instance) cpuOptionsXML() *el {
	if i.CPUNested == "" {
		return nil
	}
	return E("cpuOptions", T("nestedVirtualization", i.CPUNested))
}

// efaInterfaceCount counts the EFA interfaces (efa and efa-only) among an instance's interfaces.
func efaInterfaceCount(nis []instanceInterface) int {
	n := 0
	for _, ni := range nis {
		if ni.Type == "efa" || ni.Type == "efa-only" {
			n++
		}
	}
	return n
}
