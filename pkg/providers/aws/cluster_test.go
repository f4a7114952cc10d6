package aws

import (
	"context"
	"errors"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeEKS struct {
	version string
	calls   int
}

func (f *fakeEKS) DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	f.calls++
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{Version: awssdk.String(f.version),
		Endpoint: awssdk.String("https://eks.example"), CertificateAuthority: &ekstypes.Certificate{Data: awssdk.String("CA")},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv4Cidr: awssdk.String("172.20.0.0/16")}}}, nil
}

// TestClusterDNSFromKubeDNS: the nodes' DNS address is the kube-dns Service's ClusterIP (IPv4 or IPv6); without
// the Service, or with a ClusterIP that is not an address (None), it is the tenth address of the service CIDR.
func TestClusterDNSFromKubeDNS(t *testing.T) {
	for _, tc := range []struct {
		name string
		dns  func(context.Context) (string, error)
		want string
	}{
		{"kube-dns ClusterIP", func(context.Context) (string, error) { return "172.20.0.53", nil }, "172.20.0.53"},
		{"IPv6 kube-dns", func(context.Context) (string, error) { return "fd00:10:96::a", nil }, "fd00:10:96::a"},
		{"no kube-dns Service", func(context.Context) (string, error) { return "", errors.New(`services "kube-dns" not found`) }, "172.20.0.10"},
		{"headless kube-dns", func(context.Context) (string, error) { return "None", nil }, "172.20.0.10"},
		{"not read", nil, "172.20.0.10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &clusterInfoSource{eks: &fakeEKS{version: "1.34"}, name: "c", kubeDNS: tc.dns,
				clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))}
			info, err := s.get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info.ClusterDNS != tc.want {
				t.Errorf("ClusterDNS = %q, want %q", info.ClusterDNS, tc.want)
			}
		})
	}
}

// TestClusterInfoReadsEKSOnceThenOnlyTheVersion: the first answer fills everything with one DescribeCluster call;
// later calls reuse it until VersionRefresh, then ask again for the version only.
func TestClusterInfoReadsEKSOnceThenOnlyTheVersion(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	api := &fakeEKS{version: "1.34"}
	s := &clusterInfoSource{eks: api, name: "c", eksControlPlane: true, clock: clk}
	ctx := context.Background()
	for range 3 {
		if info, err := s.get(ctx); err != nil || info.KubernetesVersion != "1.34" || info.Endpoint != "https://eks.example" {
			t.Fatalf("get = %+v, %v", info, err)
		}
	}
	if api.calls != 1 {
		t.Errorf("%d DescribeCluster calls, want 1", api.calls)
	}
	api.version = "1.35"
	clk.Step(VersionRefresh)
	if info, err := s.get(ctx); err != nil || info.KubernetesVersion != "1.35" {
		t.Fatalf("after the refresh: %+v, %v", info, err)
	}
	if api.calls != 2 {
		t.Errorf("%d DescribeCluster calls, want 2", api.calls)
	}
}

// TestClusterInfoVersionRefreshInterval: a configured refresh interval replaces VersionRefresh: the version is
// read again once it has passed, not before.
func TestClusterInfoVersionRefreshInterval(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	api := &fakeEKS{version: "1.34"}
	s := &clusterInfoSource{eks: api, name: "c", eksControlPlane: true, versionRefresh: 10 * time.Second, clock: clk}
	ctx := context.Background()
	version := func() string {
		t.Helper()
		info, err := s.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.KubernetesVersion
	}
	if v := version(); v != "1.34" {
		t.Fatalf("version %q, want 1.34", v)
	}
	api.version = "1.35"
	clk.Step(9 * time.Second)
	if v := version(); v != "1.34" {
		t.Errorf("version %q 9s after the first read, want still 1.34", v)
	}
	clk.Step(time.Second)
	if v := version(); v != "1.35" {
		t.Errorf("version %q 10s after the first read, want 1.35", v)
	}
}

// fakeEKSNetwork answers DescribeCluster with a given network configuration.
type fakeEKSNetwork struct {
	nc *ekstypes.KubernetesNetworkConfigResponse
}

func (f fakeEKSNetwork) DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{Version: awssdk.String("1.34"),
		Endpoint: awssdk.String("https://eks.example"), CertificateAuthority: &ekstypes.Certificate{Data: awssdk.String("CA")},
		KubernetesNetworkConfig: f.nc}}, nil
}

// TestClusterIPFamily: a cluster is IPv6 when its DNS address is (the kube-dns Service's ClusterIP, or without
// it the tenth address of EKS's IPv6 service range); the service CIDR handed to nodeadm is the IPv6 range then.
func TestClusterIPFamily(t *testing.T) {
	v4 := &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv4Cidr: awssdk.String("172.20.0.0/16"), IpFamily: ekstypes.IpFamilyIpv4}
	v6 := &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv6Cidr: awssdk.String("fd30:1c53:5f8a::/108"), IpFamily: ekstypes.IpFamilyIpv6}
	dns := func(ip string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return ip, nil }
	}
	noDNS := func(context.Context) (string, error) { return "", errors.New(`services "kube-dns" not found`) }
	for _, tc := range []struct {
		name              string
		nc                *ekstypes.KubernetesNetworkConfigResponse
		kubeDNS           func(context.Context) (string, error)
		wantDNS, wantCIDR string
		wantFamily        corev1.IPFamily
	}{
		{"IPv4 cluster", v4, dns("172.20.0.10"), "172.20.0.10", "172.20.0.0/16", corev1.IPv4Protocol},
		{"IPv6 cluster", v6, dns("fd30:1c53:5f8a::a"), "fd30:1c53:5f8a::a", "fd30:1c53:5f8a::/108", corev1.IPv6Protocol},
		{"IPv6 cluster without kube-dns", v6, noDNS, "fd30:1c53:5f8a::a", "fd30:1c53:5f8a::/108", corev1.IPv6Protocol},
		{"IPv6 kube-dns, no network configuration from EKS", nil, dns("fd00:10:96::a"), "fd00:10:96::a", defaultServiceCIDR, corev1.IPv6Protocol},
		{"IPv4-mapped kube-dns address is IPv4", v4, dns("::ffff:172.20.0.10"), "::ffff:172.20.0.10", "172.20.0.0/16", corev1.IPv4Protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &clusterInfoSource{eks: fakeEKSNetwork{tc.nc}, name: "c", kubeDNS: tc.kubeDNS,
				clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))}
			info, err := s.get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := [3]string{info.ClusterDNS, info.ServiceCIDR, string(info.IPFamily)}
			if want := [3]string{tc.wantDNS, tc.wantCIDR, string(tc.wantFamily)}; got != want {
				t.Errorf("DNS, service CIDR, family = %v, want %v", got, want)
			}
			if info.IPv6() != (tc.wantFamily == corev1.IPv6Protocol) {
				t.Errorf("IPv6() = %v", info.IPv6())
			}
		})
	}
}
