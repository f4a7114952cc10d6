package resolve

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// InstanceProfileProtection is how long after its creation an instance profile is never collected, whatever
// uses it (Karpenter's protection window): a node class's status and the instances launched with a new profile
// may name it only after a while.
const InstanceProfileProtection = time.Hour

// OwnedProfile is an instance profile Dovetail created for this cluster in this region.
type OwnedProfile struct {
	Name string
	// NodeClass is the EC2NodeClass it was created for (its karpenter.k8s.aws/ec2nodeclass tag).
	NodeClass string
	Created   time.Time
}

// ProfilesToCollect returns, sorted, the owned profiles no longer needed: not kept (named by a node class, or by
// the node class of a live instance) and created at least InstanceProfileProtection before now.
func ProfilesToCollect(owned []OwnedProfile, keep map[string]bool, now time.Time) []string {
	var out []string
	for _, p := range owned {
		if keep[p.Name] || now.Sub(p.Created) < InstanceProfileProtection {
			continue
		}
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// InstanceProfilesInUse are the names of the profiles the node classes and the instances' node classes need: each
// class's status.instanceProfile, the profile Dovetail makes for each class with spec.role, and the profile of
// the node class each live instance was launched with.
func (r *Resolver) InstanceProfilesInUse(classes []awsv1.EC2NodeClass, instanceNodeClasses []string) map[string]bool {
	keep := map[string]bool{}
	for _, nc := range classes {
		if nc.Status.InstanceProfile != "" {
			keep[nc.Status.InstanceProfile] = true
		}
		if nc.Spec.Role != "" {
			keep[InstanceProfileName(r.cluster, r.region, nc.Name)] = true
		}
	}
	for _, name := range instanceNodeClasses {
		if name != "" {
			keep[InstanceProfileName(r.cluster, r.region, name)] = true
		}
	}
	return keep
}

// OwnedInstanceProfiles lists the instance profiles Dovetail created for this cluster in this region: named as
// InstanceProfileName names them and tagged with the cluster's UID and the region (IAM lists no tags, so each
// candidate is read once).
func (r *Resolver) OwnedInstanceProfiles(ctx context.Context) ([]OwnedProfile, error) {
	prefix := profileNamePrefix(r.cluster)
	var out []OwnedProfile
	var marker *string
	for {
		page, err := r.iam.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{Marker: marker})
		if err != nil {
			return nil, sdk.Wrap(err, "listing instance profiles")
		}
		for _, p := range page.InstanceProfiles {
			name := aws.ToString(p.InstanceProfileName)
			if !strings.HasPrefix(name, prefix) || len(name) != len(prefix)+16 {
				continue
			}
			full, err := r.getProfile(ctx, name)
			if sdk.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			t := tagsOf(full.Tags)
			if r.cluster.Owner(t) != tags.Owned || t[corev1.LabelTopologyRegion] != r.region {
				continue
			}
			out = append(out, OwnedProfile{Name: name, NodeClass: t[awsv1.TagNodeClass], Created: aws.ToTime(full.CreateDate)})
		}
		if !page.IsTruncated || page.Marker == nil {
			return out, nil
		}
		marker = page.Marker
	}
}

// DeleteOwnedInstanceProfile deletes a profile OwnedInstanceProfiles returned.
func (r *Resolver) DeleteOwnedInstanceProfile(ctx context.Context, p OwnedProfile) error {
	if err := r.deleteOwnedProfile(ctx, p.Name, p.NodeClass); err != nil {
		return fmt.Errorf("collecting instance profile %s: %w", p.Name, err)
	}
	return nil
}

// profileNamePrefix is what every name InstanceProfileName gives for the cluster starts with.
func profileNamePrefix(cluster tags.Cluster) string {
	name := InstanceProfileName(cluster, "", "")
	return name[:len(name)-16]
}
