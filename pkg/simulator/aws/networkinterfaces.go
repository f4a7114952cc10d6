package awssim

import (
	"net/http"
	"strings"
)

// eniRef is one network interface of an instance, as DescribeNetworkInterfaces lists it.
type eniRef struct {
	inst *instance
	n    int
}

// describeNetworkInterfaces lists the network interfaces of the account's instances that are not terminated (EC2
// deletes an instance's interfaces with it): by NetworkInterfaceId.N and the filters network-interface-id,
// attachment.instance-id, subnet-id, vpc-id, availability-zone, interface-type, status, private-ip-address and
// ipv6-addresses.ipv6-address, paged with MaxResults (5..1000) and NextToken.
func (s *Simulator) describeNetworkInterfaces(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []eniRef
	for _, i := range a.sortedInstances() {
		if i.State == StateTerminated {
			continue
		}
		for n := range i.NetworkInterfaces {
			all = append(all, eniRef{i, n})
		}
	}
	if ids := p.strings("NetworkInterfaceId"); len(ids) > 0 {
		byID := map[string]eniRef{}
		for _, r := range all {
			byID[r.inst.NetworkInterfaces[r.n].ID] = r
		}
		var selected []eniRef
		var missing []string
		for _, id := range ids {
			r, ok := byID[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			selected = append(selected, r)
		}
		if len(missing) > 0 {
			return nil, errBadRequest("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist", strings.Join(missing, ", "))
		}
		all = selected
	}
	values := func(r eniRef) valuesFunc {
		return func(name string) ([]string, bool) {
			i, ni := r.inst, r.inst.NetworkInterfaces[r.n]
			primary := r.n == 0 && ni.Type != "efa-only"
			switch name {
			case "network-interface-id":
				return []string{ni.ID}, true
			case "attachment.instance-id":
				return []string{i.ID}, true
			case "subnet-id":
				return []string{i.SubnetID}, true
			case "vpc-id":
				return []string{a.vpcID}, true
			case "availability-zone":
				return []string{i.Zone}, true
			case "interface-type":
				return []string{ni.Type}, true
			case "status":
				return []string{"in-use"}, true
			case "private-ip-address":
				if primary && i.PrivateIP != "" {
					return []string{i.PrivateIP}, true
				}
				return nil, true
			case "ipv6-addresses.ipv6-address":
				if primary && i.IPv6Address != "" {
					return []string{i.IPv6Address}, true
				}
				return nil, true
			}
			return nil, false
		}
	}
	fs := p.filters()
	if err := validateFilters(fs, values(eniRef{&instance{NetworkInterfaces: []instanceInterface{{}}}, 0})); err != nil {
		return nil, err
	}
	var matched []eniRef
	for _, r := range all {
		ok, err := matchFilters(fs, values(r), tagSet{})
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, r)
		}
	}
	if p.has("MaxResults") {
		if n, ok := p.intOr("MaxResults", 0); !ok || n < 5 || n > 1000 {
			return nil, errInvalidParam("Value ( %s ) for parameter maxResults is invalid. Expecting a value between 5 and 1000", p.get("MaxResults"))
		}
	}
	pageItems, next, err := page(matched, p, len(matched)+1, 0)
	if err != nil {
		return nil, err
	}
	items := make([]*el, 0, len(pageItems))
	for _, r := range pageItems {
		i := r.inst
		var groups []*el
		for _, id := range i.SecurityGroups {
			name := ""
			if g := a.sgByID(id); g != nil {
				name = g.Name
			}
			groups = append(groups, E("item", T("groupId", id), T("groupName", name)))
		}
		var dns *el
		if r.n == 0 {
			dns = T("privateDnsName", i.PrivateDNS)
		}
		ipv6Native := false
		if sn := a.subnetByID(i.SubnetID); sn != nil {
			ipv6Native = sn.IPv6Native
		}
		items = append(items, i.interfaceXML(r.n, a.vpcID, []*el{T("availabilityZone", i.Zone), T("ownerId", a.number),
			T("description", ""), B("requesterManaged", false), B("sourceDestCheck", true), dns,
			List("groupSet", "item", groups), List("tagSet", "item", nil), B("ipv6Native", ipv6Native)}))
	}
	return []*el{List("networkInterfaceSet", "item", items), next}, nil
}
