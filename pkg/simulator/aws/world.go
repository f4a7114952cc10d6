package awssim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"time"
)

// account is the state of one simulated AWS account (one access key id).
type account struct {
	key    string
	number string

	vpcID string
	// vpcIPv6 is the VPC's IPv6 range in an IPv6 cluster (invalid otherwise).
	vpcIPv6      netip.Prefix
	subnets      []*subnet
	sgs          []*securityGroup
	images       []*image
	ssm          map[string]*ssmParam
	templates    map[string]*launchTemplate // by name
	instances    map[string]*instance
	profiles     map[string]*instanceProfile
	roles        map[string]*role
	queues       map[string]*queue
	reservations []*capacityReservation
	amiRelease   int
	// placementGroups by name (placementgroups.go); nil until the first CreatePlacementGroup.
	placementGroups map[string]*placementGroup
}

type subnet struct {
	ID, Zone, ZoneID string
	CIDR             netip.Prefix
	MapPublicIP      bool
	Tags             tagSet
	used             map[int]bool
	next             int
	// maxAvailable caps the free address count (fault injection for IP exhaustion); -1 means no cap.
	maxAvailable int
	// IPv6CIDR is the subnet's IPv6 range in an IPv6 cluster (invalid otherwise); nextIPv6 counts the IPv6
	// addresses handed out.
	IPv6CIDR netip.Prefix
	nextIPv6 uint32
	// IPv6Native marks an IPv6-only subnet (no IPv4 range, CIDR invalid): its instances get an IPv6 address and a
	// resource-name DNS name and no private IPv4 address. DNS64 is its enableDns64 attribute. nextIPv6Prefix counts
	// the IPv6 /80 prefixes handed out.
	IPv6Native     bool
	DNS64          bool
	nextIPv6Prefix uint32
}

func (sn *subnet) size() int {
	if !sn.CIDR.IsValid() {
		return 0
	}
	return 1 << (32 - sn.CIDR.Bits())
}

// available is the free address count as EC2 reports it (5 addresses reserved per subnet).
func (sn *subnet) available() int {
	if sn.IPv6Native {
		return 0 // EC2 counts IPv4 addresses only: an IPv6-only subnet reports none
	}
	n := sn.size() - 5 - len(sn.used)
	if sn.maxAvailable >= 0 && sn.maxAvailable < n {
		n = sn.maxAvailable
	}
	return max(n, 0)
}

// allocate returns a free private IP, or false when the subnet is exhausted.
func (sn *subnet) allocate() (netip.Addr, bool) {
	if sn.available() <= 0 {
		return netip.Addr{}, false
	}
	n := sn.size()
	for i := 0; i < n; i++ {
		off := 4 + (sn.next+i)%(n-5)
		if !sn.used[off] {
			sn.used[off] = true
			sn.next = off - 4 + 1
			if sn.maxAvailable > 0 {
				sn.maxAvailable--
			}
			return addrAt(sn.CIDR, off), true
		}
	}
	return netip.Addr{}, false
}

func (sn *subnet) release(ip string) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !sn.CIDR.Contains(a) {
		return
	}
	base := sn.CIDR.Masked().Addr().As4()
	b := a.As4()
	off := int(b[2]-base[2])<<8 | int(b[3]-base[3])
	delete(sn.used, off)
}

func addrAt(p netip.Prefix, off int) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(off)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

type securityGroup struct {
	ID, Name, Description string
	Tags                  tagSet
}

type image struct {
	ID, Name, Arch, Description string
	OwnerID, OwnerAlias         string
	Created                     time.Time
	Deprecation                 time.Time
	Tags                        tagSet
}

type ssmParam struct {
	Name, Value, DataType string
	Version               int64
	Modified              time.Time
}

type capacityReservation struct {
	ID, InstanceType, Zone, State string
	Total, Available              int
	End                           time.Time
	Tags                          tagSet
	// OwnerID is the owning account (differs from the describing account for a shared reservation).
	OwnerID string
	// ReservationType is default (an On-Demand Capacity Reservation) or capacity-block.
	ReservationType string
	// MatchCriteria is targeted (only launches naming the reservation use it) or open (any matching
	// on-demand launch uses it).
	MatchCriteria string
	Interruptible bool
}

// capacityBlockReclaimLead is how long before a Capacity Block's end EC2 starts terminating its instances.
const capacityBlockReclaimLead = 30 * time.Minute

// usable reports whether instances can launch into the reservation now.
func (cr *capacityReservation) usable() bool { return cr.State == "active" && cr.Available > 0 }

const (
	amazonOwnerID       = "602401143452"
	bottlerocketOwnerID = "092701018921"
)

func (s *Simulator) newAccount(key string) *account {
	a := &account{
		key:       key,
		number:    accountNumber(key),
		ssm:       map[string]*ssmParam{},
		templates: map[string]*launchTemplate{},
		instances: map[string]*instance{},
		profiles:  map[string]*instanceProfile{},
		roles:     map[string]*role{},
		queues:    map[string]*queue{},
	}
	now := s.clock.Now()
	a.vpcID = s.nextIDLocked("vpc")
	cluster := s.opts.ClusterName
	for i, z := range s.zones {
		sn := &subnet{
			ID:           s.nextIDLocked("subnet"),
			Zone:         z.Name,
			ZoneID:       z.ID,
			CIDR:         netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i * 64), 0}), 18),
			used:         map[int]bool{},
			maxAvailable: -1,
			Tags: newTagSet([]Tag{
				{Key: "karpenter.sh/discovery", Value: cluster},
				{Key: "Name", Value: fmt.Sprintf("%s-private-%s", cluster, z.Name)},
				{Key: "kubernetes.io/role/internal-elb", Value: "1"},
			}),
		}
		if s.ipv6() {
			a.vpcIPv6 = vpcIPv6CIDR(a.number)
			sn.IPv6CIDR = subnetIPv6CIDR(a.vpcIPv6, i)
			if s.opts.IPv6OnlySubnets {
				// An IPv6-only subnet as EKS's IPv6 guides set them up: no IPv4 range, an IPv6 address for every
				// interface, DNS64 on so that pods reach IPv4-only endpoints.
				sn.CIDR, sn.IPv6Native, sn.DNS64 = netip.Prefix{}, true, true
			}
		}
		a.subnets = append(a.subnets, sn)
	}
	a.sgs = []*securityGroup{
		{ID: s.nextIDLocked("sg"), Name: "default", Description: "default VPC security group", Tags: tagSet{}},
		{ID: s.nextIDLocked("sg"), Name: cluster + "-node", Description: "nodes of cluster " + cluster,
			Tags: newTagSet([]Tag{{Key: "karpenter.sh/discovery", Value: cluster}, {Key: "Name", Value: cluster + "-node"}})},
	}
	for _, r := range []string{"KarpenterNodeRole-" + cluster, cluster + "-node-role", "dovetail-node"} {
		a.roles[r] = &role{Name: r, ID: "AROA" + shortHash(a.number+r, 17), Path: "/", Created: now, Tags: tagSet{}}
	}
	for _, q := range s.opts.Queues {
		a.queues[q] = newQueue(q)
	}
	s.releaseAMIsLocked(a, now.Add(-30*24*time.Hour))
	s.releaseAMIsLocked(a, now.Add(-24*time.Hour))
	return a
}

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// releaseAMIsLocked publishes a new release of every simulated AMI family and points the SSM "latest"
// parameters at it (the previous release's versioned parameters stay).
func (s *Simulator) releaseAMIsLocked(a *account, at time.Time) {
	a.amiRelease++
	k8s := s.k8sVersion
	date := at.UTC().Format("20060102")
	brVersion := fmt.Sprintf("1.%d.0", 40+a.amiRelease)
	put := func(name, value string) {
		p, ok := a.ssm[name]
		if !ok {
			p = &ssmParam{Name: name, DataType: "aws:ec2:image"}
			a.ssm[name] = p
		}
		p.Value = value
		p.Version++
		p.Modified = at
	}
	add := func(name, arch, owner, desc string) string {
		img := &image{ID: "ami-" + shortHash(a.number+name, 17), Name: name, Arch: arch, Description: desc,
			OwnerID: owner, OwnerAlias: "amazon", Created: at, Deprecation: at.Add(2 * 365 * 24 * time.Hour),
			Tags: tagSet{}}
		a.images = append(a.images, img)
		return img.ID
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		for _, variant := range []string{"standard", "nvidia", "neuron"} {
			if variant == "neuron" && arch == "arm64" {
				continue
			}
			name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-v%s", arch, variant, k8s, date)
			id := add(name, arch, amazonOwnerID, "EKS-optimized Kubernetes node based on Amazon Linux 2023")
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s", k8s, arch, variant)
			put(base+"/recommended/image_id", id)
			put(base+"/"+name+"/image_id", id)
		}
		// Amazon Linux 2.
		al2Names := map[string]string{"x86_64": "amazon-linux-2", "arm64": "amazon-linux-2-arm64"}
		al2Image := map[string]string{"x86_64": "amazon-eks-node", "arm64": "amazon-eks-arm64-node"}
		name := fmt.Sprintf("%s-%s-v%s", al2Image[arch], k8s, date)
		id := add(name, arch, amazonOwnerID, "EKS Kubernetes Worker AMI with AmazonLinux2 image")
		put(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/recommended/image_id", k8s, al2Names[arch]), id)
		put(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k8s, al2Names[arch], name), id)
		if arch == "x86_64" {
			name := fmt.Sprintf("amazon-eks-gpu-node-%s-v%s", k8s, date)
			id := add(name, arch, amazonOwnerID, "EKS Kubernetes Worker AMI with AmazonLinux2 image, GPU")
			put(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2-gpu/recommended/image_id", k8s), id)
			put(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2-gpu/%s/image_id", k8s, name), id)
		}
		// Bottlerocket.
		for _, flavor := range []string{"", "-nvidia"} {
			name := fmt.Sprintf("bottlerocket-aws-k8s-%s%s-%s-v%s-%s", k8s, flavor, arch, brVersion, shortHash(date, 8))
			id := add(name, arch, bottlerocketOwnerID, "Bottlerocket OS")
			base := fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s", k8s, flavor, arch)
			put(base+"/latest/image_id", id)
			put(base+"/"+brVersion+"/image_id", id)
		}
	}
	// Windows Server (x86_64 only); the SSM parameters have no version, only the latest image.
	for _, year := range []string{"2019", "2022", "2025"} {
		name := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s-%s", year, k8s, at.UTC().Format("2006.01.02"))
		id := add(name, "x86_64", amazonOwnerID, "Microsoft Windows Server "+year+" Core optimized for EKS")
		put(fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s), id)
	}
	sort.Slice(a.images, func(i, j int) bool { return a.images[i].Name < a.images[j].Name })
}
