package aws_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestIPv6ClusterLaunch: against a simulated IPv6 EKS cluster whose kube-dns Service has an IPv6 ClusterIP, a
// launch gets an instance with an IPv6 address of its subnet's range, from a launch template whose user data
// gives the kubelet that DNS address and EKS's IPv6 service range.
func TestIPv6ClusterLaunch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, ClusterCA: []byte("CA"), IPFamily: awssim.IPFamilyIPv6,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	w := &world{sim: sim, srv: srv, clock: clk}
	const kubeDNS = "fd00:10:96::35"
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.KubeDNS = func(context.Context) (string, error) { return kubeDNS, nil }
	})
	p.resolvedNodeClass(t)
	ctx := context.Background()
	created, err := p.Create(ctx, claim("c", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id, err := instance.ParseProviderID(created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	inst := describe(t, p, id)
	if a, err := netip.ParseAddr(awssdk.ToString(inst.Ipv6Address)); err != nil || !a.Is6() {
		t.Errorf("instance IPv6 address %q", awssdk.ToString(inst.Ipv6Address))
	}
	var ltID string
	for _, tag := range inst.Tags {
		if awssdk.ToString(tag.Key) == "aws:ec2launchtemplate:id" {
			ltID = awssdk.ToString(tag.Value)
		}
	}
	v, err := p.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: awssdk.String(ltID), Versions: []string{"$Latest"}})
	if err != nil || len(v.LaunchTemplateVersions) != 1 {
		t.Fatalf("DescribeLaunchTemplateVersions(%s): %v", ltID, err)
	}
	b, err := awssim.ParseUserData(awssdk.ToString(v.LaunchTemplateVersions[0].LaunchTemplateData.UserData))
	if err != nil {
		t.Fatal(err)
	}
	if b.ClusterDNS != kubeDNS {
		t.Errorf("user data cluster DNS = %q, want %s", b.ClusterDNS, kubeDNS)
	}
}

// TestIPv6OnlySubnetLaunch: with IPv6-only subnets (no IPv4 range, no free IPv4 address counted) the node class
// still resolves them and a launch gets an instance with an IPv6 address, its IPv6 prefixes (ipPrefixCount asks
// for IPv6 /80 prefixes in an IPv6 cluster, as in Karpenter), no private IPv4 address and a resource-name DNS name.
func TestIPv6OnlySubnetLaunch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, ClusterCA: []byte("CA"), IPFamily: awssim.IPFamilyIPv6, IPv6OnlySubnets: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	w := &world{sim: sim, srv: srv, clock: clk}
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.KubeDNS = func(context.Context) (string, error) { return "fd00:10:96::a", nil }
	})
	nc := test.EC2NodeClass("default", "dovetail").Obj()
	nc.Spec.IPPrefixCount = awssdk.Int32(2)
	nc = p.resolve(t, nc)
	if len(nc.Status.Subnets) != 3 {
		t.Fatalf("resolved subnets %+v, want the three IPv6-only subnets", nc.Status.Subnets)
	}
	created, err := p.Create(context.Background(), claim("c", "m5.large"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id, err := instance.ParseProviderID(created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	inst := describe(t, p, id)
	if inst.PrivateIpAddress != nil || awssdk.ToString(inst.PrivateDnsName) != id+".us-west-2.compute.internal" {
		t.Errorf("private IPv4 %q, DNS name %q; want none and a resource name", awssdk.ToString(inst.PrivateIpAddress), awssdk.ToString(inst.PrivateDnsName))
	}
	if a, err := netip.ParseAddr(awssdk.ToString(inst.Ipv6Address)); err != nil || !a.Is6() {
		t.Errorf("instance IPv6 address %q", awssdk.ToString(inst.Ipv6Address))
	}
	if len(inst.NetworkInterfaces) != 1 || len(inst.NetworkInterfaces[0].Ipv6Prefixes) != 2 || len(inst.NetworkInterfaces[0].Ipv4Prefixes) != 0 {
		t.Errorf("network interfaces %+v; want one with two IPv6 prefixes", inst.NetworkInterfaces)
	}
}
