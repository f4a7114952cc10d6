package aws

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// defaultServiceCIDR is EKS's default service range, used when neither a setting nor EKS names one.
const defaultServiceCIDR = "10.100.0.0/16"

// ClusterInfo is what nodes need to join the cluster.
type ClusterInfo struct {
	Endpoint          string
	CABundle          string
	KubernetesVersion string
	ServiceCIDR       string
	// ClusterDNS is the cluster DNS service IP (the tenth address of the service CIDR).
	ClusterDNS string
}

// clusterInfoSource fills ClusterInfo from settings and, for what they leave out, from EKS DescribeCluster. A
// successful answer is kept; a failure is retried on the next call.
type clusterInfoSource struct {
	eks                                      sdk.EKSAPI
	name                                     string
	endpoint, caBundle, version, serviceCIDR string

	mu   sync.Mutex
	info *ClusterInfo
}

func (s *clusterInfoSource) get(ctx context.Context) (ClusterInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info != nil {
		return *s.info, nil
	}
	info := ClusterInfo{Endpoint: s.endpoint, CABundle: s.caBundle, KubernetesVersion: s.version, ServiceCIDR: s.serviceCIDR}
	if info.Endpoint == "" || info.CABundle == "" || info.KubernetesVersion == "" || info.ServiceCIDR == "" {
		out, err := s.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: awssdk.String(s.name)})
		if err != nil {
			if info.Endpoint == "" || info.CABundle == "" || info.KubernetesVersion == "" {
				return ClusterInfo{}, sdk.Wrap(err, "describing EKS cluster %s (set CLUSTER_ENDPOINT, CLUSTER_CA_BUNDLE and the Kubernetes version to avoid it)", s.name)
			}
		} else if c := out.Cluster; c != nil {
			if info.Endpoint == "" {
				info.Endpoint = awssdk.ToString(c.Endpoint)
			}
			if info.CABundle == "" && c.CertificateAuthority != nil {
				info.CABundle = awssdk.ToString(c.CertificateAuthority.Data)
			}
			if info.KubernetesVersion == "" {
				info.KubernetesVersion = awssdk.ToString(c.Version)
			}
			if info.ServiceCIDR == "" && c.KubernetesNetworkConfig != nil {
				info.ServiceCIDR = awssdk.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr)
			}
		}
	}
	if info.ServiceCIDR == "" {
		info.ServiceCIDR = defaultServiceCIDR
	}
	for _, f := range []struct{ name, value string }{
		{"endpoint", info.Endpoint}, {"CA bundle", info.CABundle}, {"Kubernetes version", info.KubernetesVersion},
	} {
		if f.value == "" {
			return ClusterInfo{}, fmt.Errorf("cluster %s: no %s from settings or EKS DescribeCluster", s.name, f.name)
		}
	}
	dns, err := ClusterDNS(info.ServiceCIDR)
	if err != nil {
		return ClusterInfo{}, err
	}
	info.ClusterDNS = dns
	s.info = &info
	return info, nil
}

// ClusterDNS returns the cluster DNS service address of a service CIDR: its tenth address (10.100.0.10).
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
