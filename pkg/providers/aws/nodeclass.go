package aws

import (
	"context"
	"fmt"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
)

// ResolveSubnets returns the subnets the node class selects (resolve.NoMatchError when none).
func (p *CloudProvider) ResolveSubnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	return p.resolver.Subnets(ctx, nc.Spec.SubnetSelectorTerms)
}

// ResolveSecurityGroups returns the security groups the node class selects (resolve.NoMatchError when none).
func (p *CloudProvider) ResolveSecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	return p.resolver.SecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
}

// ResolveAMIs returns the AMIs the node class selects for the cluster's Kubernetes version.
func (p *CloudProvider) ResolveAMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	var version string
	if nc.Alias() != "" {
		info, err := p.clusterInfo.get(ctx)
		if err != nil {
			return nil, err
		}
		version = info.KubernetesVersion
	}
	return p.resolver.AMIs(ctx, nc, version)
}

// ResolveInstanceProfile makes sure the node class's instance profile exists and returns its name.
func (p *CloudProvider) ResolveInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	return p.resolver.InstanceProfile(ctx, nc)
}

// ValidateNodeClass checks what can be checked without launching: the AMI family has a bootstrap, spec.kubelet is
// valid and applied by the family (validateKubelet), the user data merges with the bootstrap and fits EC2's limit.
// Refusals with a reason of their own are *awsv1.ValidationError.
func (p *CloudProvider) ValidateNodeClass(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	family := nc.AMIFamily()
	if family == "" {
		return fmt.Errorf("amiFamily is required when amiSelectorTerms has no alias")
	}
	if err := validateKubelet(family, nc.Spec.Kubelet, p.cel); err != nil {
		return err
	}
	if err := p.evaluateKubelet(ctx, nc); err != nil {
		return err
	}
	probe := instancetype.Info{Name: "validation.probe", Architectures: []string{"x86_64"}, VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}
	shape, err := instancetype.Compute(probe, p.kubeletOf(nc), p.shapeSettings(nc))
	if err != nil {
		return fmt.Errorf("kubelet settings: %w", err)
	}
	it := &cloudprovider.InstanceType{Name: probe.Name, Labels: shape.Labels, Capacity: shape.Capacity, Overhead: shape.Overhead}
	claim := &karpv1.NodeClaim{}
	b := p.bootstrap(nc, claim, cloudprovider.CapacityTypeOnDemand, it, ClusterInfo{
		Endpoint: "https://validation.invalid", CABundle: "", ServiceCIDR: defaultServiceCIDR, ClusterDNS: "10.100.0.10",
	})
	rendered, err := b.Render()
	if err != nil {
		return fmt.Errorf("userData: %w", err)
	}
	return validateUserDataSize(rendered)
}

// DeleteNodeClassResources deletes the launch templates this cluster made for the node class and the instance
// profile it created from spec.role.
func (p *CloudProvider) DeleteNodeClassResources(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if _, err := p.templates.DeleteAll(ctx, nc.Name); err != nil {
		return err
	}
	return p.resolver.DeleteInstanceProfile(ctx, nc)
}
