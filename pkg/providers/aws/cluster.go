package aws

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// defaultServiceCIDR is EKS's default service range, used when neither a setting nor EKS names one.
const defaultServiceCIDR = "10.100.0.0/16"

// VersionRefresh is how often the cluster's Kubernetes version is read again by default (Karpenter's interval;
// KUBERNETES_VERSION_REFRESH_INTERVAL changes it), so that a control-plane upgrade moves AMI aliases to the new
// version's AMIs without a restart.
const VersionRefresh = 5 * time.Minute

// ClusterInfo is what nodes need to join the cluster.
type ClusterInfo struct {
	Endpoint          string
	CABundle          string
	KubernetesVersion string
	ServiceCIDR       string
	// ClusterDNS is the cluster DNS service IP: the kube-dns Service's ClusterIP, else the tenth address of the
	// service CIDR.
	ClusterDNS string
	// IPFamily is the family of the cluster's pod and service addresses: IPv6 when the cluster DNS address is an
	// IPv6 address, else IPv4.
	IPFamily corev1.IPFamily
}

// IPv6 says whether the cluster is an IPv6 cluster.
func (c ClusterInfo) IPv6() bool { return c.IPFamily == corev1.IPv6Protocol }

// clusterInfoSource fills ClusterInfo from settings, the Kubernetes API and, for what they leave out, EKS
// DescribeCluster. The endpoint, CA, service CIDR and DNS address are kept once known (a failure is retried on
// the next call); the Kubernetes version is read again every versionRefresh: from the API server's discovery
// (EKS_CONTROL_PLANE=false, the default) or EKS DescribeCluster (EKS_CONTROL_PLANE=true).
type clusterInfoSource struct {
	eks                                      sdk.EKSAPI
	name                                     string
	endpoint, caBundle, version, serviceCIDR string
	// eksControlPlane reads the version from EKS DescribeCluster instead of the API server.
	eksControlPlane bool
	// serverVersion returns the API server's version ("1.34"); nil reads it from EKS.
	serverVersion func(context.Context) (string, error)
	// kubeDNS returns the ClusterIP of kube-system/kube-dns ("" or an error: none); nil skips it.
	kubeDNS func(context.Context) (string, error)
	// versionRefresh is how often the version is read again; zero means VersionRefresh.
	versionRefresh time.Duration
	clock          clock.Clock

	mu sync.Mutex
	// info is the cached answer; its KubernetesVersion was read at versionAt.
	info      *ClusterInfo
	versionAt time.Time
}

func (s *clusterInfoSource) get(ctx context.Context) (ClusterInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info == nil {
		info, err := s.discover(ctx)
		if err != nil {
			return ClusterInfo{}, err
		}
		s.info = &info
	}
	if err := s.refreshVersionLocked(ctx); err != nil {
		return ClusterInfo{}, err
	}
	return *s.info, nil
}

// versionFromEKS says whether the version comes from EKS DescribeCluster.
func (s *clusterInfoSource) versionFromEKS() bool { return s.eksControlPlane || s.serverVersion == nil }

// discover reads what does not change while the cluster lives: endpoint, CA, service CIDR and DNS address (and
// the version, when EKS gives it in the same answer).
func (s *clusterInfoSource) discover(ctx context.Context) (ClusterInfo, error) {
	info := ClusterInfo{Endpoint: s.endpoint, CABundle: s.caBundle, ServiceCIDR: s.serviceCIDR}
	wantVersion := s.version == "" && s.versionFromEKS()
	if info.Endpoint == "" || info.CABundle == "" || info.ServiceCIDR == "" || wantVersion {
		out, err := s.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: awssdk.String(s.name)})
		if err != nil {
			if info.Endpoint == "" || info.CABundle == "" || wantVersion {
				return ClusterInfo{}, sdk.Wrap(err, "describing EKS cluster %s (set CLUSTER_ENDPOINT and CLUSTER_CA_BUNDLE to avoid it)", s.name)
			}
		} else if c := out.Cluster; c != nil {
			if info.Endpoint == "" {
				info.Endpoint = awssdk.ToString(c.Endpoint)
			}
			if info.CABundle == "" && c.CertificateAuthority != nil {
				info.CABundle = awssdk.ToString(c.CertificateAuthority.Data)
			}
			if wantVersion && awssdk.ToString(c.Version) != "" {
				info.KubernetesVersion = awssdk.ToString(c.Version)
				s.versionAt = s.clock.Now()
			}
			if info.ServiceCIDR == "" {
				info.ServiceCIDR = eksServiceCIDR(c.KubernetesNetworkConfig)
			}
		}
	}
	if info.ServiceCIDR == "" {
		info.ServiceCIDR = defaultServiceCIDR
	}
	for _, f := range []struct{ name, value string }{{"endpoint", info.Endpoint}, {"CA bundle", info.CABundle}} {
		if f.value == "" {
			return ClusterInfo{}, fmt.Errorf("cluster %s: no %s from settings or EKS DescribeCluster", s.name, f.name)
		}
	}
	dns, err := s.clusterDNS(ctx, info.ServiceCIDR)
	if err != nil {
		return ClusterInfo{}, err
	}
	info.ClusterDNS = dns
	info.IPFamily = ipFamily(dns)
	if info.IPv6() {
		log.FromContext(ctx).V(1).Info("discovered an IPv6 cluster", "cluster-dns", dns, "service-cidr", info.ServiceCIDR)
	}
	return info, nil
}

// eksServiceCIDR is the service range EKS reports: the IPv6 range of an IPv6 cluster (ipFamily ipv6), else the
// IPv4 range, else whichever is set.
func eksServiceCIDR(nc *ekstypes.KubernetesNetworkConfigResponse) string {
	if nc == nil {
		return ""
	}
	v4, v6 := awssdk.ToString(nc.ServiceIpv4Cidr), awssdk.ToString(nc.ServiceIpv6Cidr)
	if nc.IpFamily == ekstypes.IpFamilyIpv6 && v6 != "" {
		return v6
	}
	if v4 != "" {
		return v4
	}
	return v6
}

// ipFamily is the IP family of an address: IPv6 for an IPv6 address (not an IPv4-mapped one), else IPv4.
func ipFamily(addr string) corev1.IPFamily {
	if a, err := netip.ParseAddr(addr); err == nil && a.Unmap().Is6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// clusterDNS is the kube-dns Service's ClusterIP, or the tenth address of the service CIDR when the Service
// cannot be read (a cluster with another DNS setup).
func (s *clusterInfoSource) clusterDNS(ctx context.Context, serviceCIDR string) (string, error) {
	if s.kubeDNS != nil {
		ip, err := s.kubeDNS(ctx)
		if err == nil {
			if a, perr := netip.ParseAddr(ip); perr == nil {
				log.FromContext(ctx).V(1).Info("discovered the cluster DNS address", "kube-dns-ip", a.String())
				return a.String(), nil
			}
			err = fmt.Errorf("kube-system/kube-dns has ClusterIP %q, not an IP address", ip)
		}
		log.FromContext(ctx).V(1).Info("cannot read the kube-dns Service; using the tenth address of the service CIDR",
			"service-cidr", serviceCIDR, "error", err.Error())
	}
	return ClusterDNS(serviceCIDR)
}

// refreshVersionLocked reads the Kubernetes version when it is unknown or older than the refresh interval. A failed
// refresh keeps the version known before; with none, it is an error.
func (s *clusterInfoSource) refreshVersionLocked(ctx context.Context) error {
	if s.version != "" {
		s.info.KubernetesVersion = s.version
		return nil
	}
	every := s.versionRefresh
	if every <= 0 {
		every = VersionRefresh
	}
	if s.info.KubernetesVersion != "" && s.clock.Since(s.versionAt) < every {
		return nil
	}
	v, err := s.readVersion(ctx)
	if err != nil {
		if s.info.KubernetesVersion != "" {
			log.FromContext(ctx).Error(err, "reading the Kubernetes version failed; keeping the previous one", "version", s.info.KubernetesVersion)
			s.versionAt = s.clock.Now()
			return nil
		}
		return err
	}
	if old := s.info.KubernetesVersion; old != v {
		log.FromContext(ctx).Info("discovered the Kubernetes version", "version", v, "previous", old)
	}
	s.info.KubernetesVersion, s.versionAt = v, s.clock.Now()
	return nil
}

func (s *clusterInfoSource) readVersion(ctx context.Context) (string, error) {
	if !s.versionFromEKS() {
		v, err := s.serverVersion(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the Kubernetes version from the API server: %w", err)
		}
		if v == "" {
			return "", fmt.Errorf("the API server reported no Kubernetes version")
		}
		return v, nil
	}
	out, err := s.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: awssdk.String(s.name)})
	if err != nil {
		return "", sdk.Wrap(err, "describing EKS cluster %s for its Kubernetes version", s.name)
	}
	if out.Cluster == nil || awssdk.ToString(out.Cluster.Version) == "" {
		return "", fmt.Errorf("EKS cluster %s: DescribeCluster reported no Kubernetes version", s.name)
	}
	return awssdk.ToString(out.Cluster.Version), nil
}

// ClusterDNS returns the cluster DNS service address of a service CIDR: its tenth address (10.100.0.10, or
// fd00:10:96::a for fd00:10:96::/108).
func ClusterDNS(serviceCIDR string) (string, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return "", fmt.Errorf("service CIDR %q: %w", serviceCIDR, err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return "", fmt.Errorf("service CIDR %q is too small for a cluster DNS address", serviceCIDR)
	}
	return a.String(), nil
}
