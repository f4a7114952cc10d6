package awssim

import (
	"fmt"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// IP families of the simulated cluster (Options.IPFamily), spelled as EKS spells them.
const (
	IPFamilyIPv4 = "ipv4"
	IPFamilyIPv6 = "ipv6"
)

// defaultIPFamily fills and checks the IP family options.
func defaultIPFamily(opts *Options) error {
	switch opts.IPFamily {
	case "":
		opts.IPFamily = IPFamilyIPv4
	case IPFamilyIPv4, IPFamilyIPv6:
	default:
		return fmt.Errorf("IP family %q: want %s or %s", opts.IPFamily, IPFamilyIPv4, IPFamilyIPv6)
	}
	if opts.IPv6OnlySubnets && opts.IPFamily != IPFamilyIPv6 {
		return fmt.Errorf("IPv6-only subnets need the %s IP family, not %s", IPFamilyIPv6, opts.IPFamily)
	}
	if opts.ServiceIPv6CIDR == "" {
		opts.ServiceIPv6CIDR = "fd00:10:96::/108"
	}
	if p, err := netip.ParsePrefix(opts.ServiceIPv6CIDR); err != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
		return fmt.Errorf("IPv6 service CIDR %q is not an IPv6 prefix", opts.ServiceIPv6CIDR)
	}
	return nil
}

// ipv6 says whether the simulated cluster is an IPv6 cluster.
func (s *Simulator) ipv6() bool { return s.opts.IPFamily == IPFamilyIPv6 }

// vpcIPv6CIDR is an account's VPC IPv6 range: a /56 of Amazon's 2600:1f00::/24 pool, derived from the account
// number so that every account differs.
func vpcIPv6CIDR(accountNumber string) netip.Prefix {
	n, _ := strconv.ParseUint(accountNumber, 10, 64)
	var b [16]byte
	b[0], b[1], b[2] = 0x26, 0x00, 0x1f
	b[3], b[4], b[5] = byte(n>>16), byte(n>>8), byte(n)
	return netip.PrefixFrom(netip.AddrFrom16(b), 56)
}

// subnetIPv6CIDR is the i-th /64 of a VPC's /56.
func subnetIPv6CIDR(vpc netip.Prefix, i int) netip.Prefix {
	b := vpc.Masked().Addr().As16()
	b[7] = byte(i)
	return netip.PrefixFrom(netip.AddrFrom16(b), 64)
}

// allocateIPv6 returns the subnet's next IPv6 address (a /64 does not run out here).
func (sn *subnet) allocateIPv6() string {
	sn.nextIPv6++
	b := sn.IPv6CIDR.Masked().Addr().As16()
	n := sn.nextIPv6 + 3 // EC2 keeps the first four addresses of a subnet
	b[12], b[13], b[14], b[15] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return netip.AddrFrom16(b).String()
}

// wantsIPv6 says whether a launch template asks for an IPv6 address on the instance's primary interface
// (NetworkInterface.N with DeviceIndex 0, or the first, with Ipv6AddressCount >= 1 or PrimaryIpv6 true).
func (lt *launchTemplate) wantsIPv6() bool {
	if lt == nil {
		return false
	}
	for _, ni := range lt.Data.list("NetworkInterface") {
		if d := ni.get("DeviceIndex"); d != "" && d != "0" {
			continue
		}
		if n, err := strconv.Atoi(ni.get("Ipv6AddressCount")); err == nil && n > 0 {
			return true
		}
		return ni.get("PrimaryIpv6") == "true" || len(ni.list("Ipv6Addresses")) > 0
	}
	return false
}

// ipv6NodeProblem says why an instance of an IPv6 cluster cannot join it ("" when it can): its kubelet needs an
// IPv6 address for the Node and an IPv6 cluster DNS address.
func ipv6NodeProblem(i *instance, b Bootstrap) string {
	if i.IPv6Address == "" {
		return "the instance has no IPv6 address (its launch template asks for none), so its kubelet cannot join the IPv6 cluster"
	}
	if b.ClusterDNS == "" {
		return "the user data gives the kubelet no cluster DNS address"
	}
	if a, err := netip.ParseAddr(b.ClusterDNS); err != nil || !a.Unmap().Is6() {
		return fmt.Sprintf("the user data's cluster DNS address %q is not an IPv6 address", b.ClusterDNS)
	}
	return ""
}

// ipv6Associations is the ipv6CidrBlockAssociationSet of a VPC or subnet with an IPv6 range (nil without one).
func ipv6Associations(p netip.Prefix, kind, region string) *el {
	if !p.IsValid() {
		return nil
	}
	return List("ipv6CidrBlockAssociationSet", "item", []*el{E("item",
		T("associationId", kind+"-cidr-assoc-"+shortHash(p.String(), 17)), T("ipv6CidrBlock", p.String()),
		E("ipv6CidrBlockState", T("state", "associated")), T("networkBorderGroup", region), T("ipv6Pool", "Amazon"))})
}

// subnetCIDRXML is a subnet's cidrBlock; an IPv6-only subnet has none.
func subnetCIDRXML(sn *subnet) *el {
	if sn.IPv6Native {
		return nil
	}
	return T("cidrBlock", sn.CIDR.String())
}

// subnetIPv6XML is a subnet's IPv6 and DNS fields as EC2 reports them: a dual-stack subnet gives no IPv6 address
// unasked and names instances after their IPv4 address (ip-name); an IPv6-only subnet (ipv6Native) gives every
// interface an IPv6 address and names instances after their id (resource-name, with an AAAA record), as EC2
// requires for IPv6-only subnets. A subnet without an IPv6 range has no IPv6 association.
func subnetIPv6XML(sn *subnet, region string) []*el {
	hostname, aaaa, a := "ip-name", false, false
	if sn.IPv6Native {
		hostname, aaaa = "resource-name", true
	}
	return []*el{B("enableDns64", sn.DNS64), E("privateDnsNameOptionsOnLaunch", T("hostnameType", hostname),
		B("enableResourceNameDnsARecord", a), B("enableResourceNameDnsAAAARecord", aaaa)),
		ipv6Associations(sn.IPv6CIDR, "subnet", region), B("assignIpv6AddressOnCreation", sn.IPv6Native), B("ipv6Native", sn.IPv6Native)}
}

// allocateIPv6Prefix returns the subnet's next IPv6 /80 prefix (the size EC2 delegates), taken from the top half
// of the /64 so that it never overlaps the addresses allocateIPv6 hands out.
func (sn *subnet) allocateIPv6Prefix() string {
	sn.nextIPv6Prefix++
	b := sn.IPv6CIDR.Masked().Addr().As16()
	n := sn.nextIPv6Prefix
	b[8], b[9] = 0x80|byte(n>>8), byte(n)
	return netip.PrefixFrom(netip.AddrFrom16(b), 80).String()
}

// resourceName is an instance's resource-based private DNS name, as EC2 gives it in a subnet whose hostname type
// is resource-name (every IPv6-only subnet).
func resourceName(instanceID, region string) string {
	return instanceID + "." + region + ".compute.internal"
}

// kubernetesNetworkConfig is EKS DescribeCluster's kubernetesNetworkConfig: the IPv4 service range, or in an
// IPv6 cluster the IPv6 one.
func (s *Simulator) kubernetesNetworkConfig() map[string]string {
	if s.ipv6() {
		return map[string]string{"serviceIpv6Cidr": s.opts.ServiceIPv6CIDR, "ipFamily": IPFamilyIPv6}
	}
	return map[string]string{"serviceIpv4Cidr": s.opts.ServiceCIDR, "ipFamily": IPFamilyIPv4}
}

// ipv6NodeAddress is the InternalIP address of an instance's IPv6 address (none without one).
func ipv6NodeAddress(i *instance) []corev1.NodeAddress {
	if i.IPv6Address == "" {
		return nil
	}
	return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: i.IPv6Address}}
}

// checkSubnetFamilyLocked refuses a launch the subnet's address families cannot take, as EC2 does: an IPv6-only
// subnet takes only instance types built on the Nitro System and no IPv4 prefixes; IPv6 prefixes need a subnet
// with an IPv6 range.
func (s *Simulator) checkSubnetFamilyLocked(c *candidate, nis []instanceInterface) *apiError {
	for _, ni := range nis {
		if ni.IPv6PrefixCount > 0 && !c.subnet.IPv6CIDR.IsValid() {
			return errInvalidParam("Subnet '%s' has no IPv6 CIDR block: IPv6 prefixes cannot be assigned", c.subnet.ID)
		}
		if ni.IPv4Prefixes > 0 && c.subnet.IPv6Native {
			return errInvalidParam("Subnet '%s' is an IPv6-only subnet: IPv4 prefixes cannot be assigned", c.subnet.ID)
		}
	}
	if c.subnet.IPv6Native && c.typ != nil && c.typ.Hypervisor == "xen" {
		return errBadRequest("InvalidParameterCombination", "Instance type %s is not supported in IPv6-only subnet '%s': only instances built on the Nitro System are", c.typeName, c.subnet.ID)
	}
	return nil
}

// nodeAddresses are the addresses of an instance's Node: in an IPv6 cluster the IPv6 address first (the kubelet's
// node IP), then the private IPv4 address (none in an IPv6-only subnet), then its DNS name.
func nodeAddresses(i *instance) []corev1.NodeAddress {
	out := ipv6NodeAddress(i)
	if i.PrivateIP != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: i.PrivateIP})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: i.PrivateDNS},
		corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: i.PrivateDNS})
}
