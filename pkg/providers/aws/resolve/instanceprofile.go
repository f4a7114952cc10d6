package resolve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// maxInstanceProfileName is IAM's limit on instance profile names.
const maxInstanceProfileName = 128

// InstanceProfileName returns the name of the instance profile Dovetail creates for a node class that names a
// role: the cluster name and a hash of region, cluster UID and node class name. IAM names are account-wide, so
// the hash keeps two clusters of the same name (or region) apart.
func InstanceProfileName(cluster tags.Cluster, region, nodeClass string) string {
	sum := sha256.Sum256([]byte(region + "/" + cluster.UID + "/" + nodeClass))
	suffix := "_" + hex.EncodeToString(sum[:])[:16]
	name := cluster.Name
	if len(name)+len(suffix) > maxInstanceProfileName {
		name = name[:maxInstanceProfileName-len(suffix)]
	}
	return name + suffix
}

// RoleName returns the role name of a role given as a name, a path/name or an ARN.
func RoleName(role string) string {
	if i := strings.LastIndex(role, "/"); i >= 0 {
		return role[i+1:]
	}
	return role
}

// InstanceProfile makes sure the node class's instance profile exists and returns its name. A given
// spec.instanceProfile must exist; for spec.role, Dovetail creates (and tags) its own profile and attaches the role.
func (r *Resolver) InstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil {
		name := *nc.Spec.InstanceProfile
		if _, err := r.getProfile(ctx, name); err != nil {
			if sdk.IsNotFound(err) {
				return "", &awsv1.ValidationError{Reason: awsv1.ReasonInstanceProfileNotFound,
					Message: fmt.Sprintf("instance profile %q (spec.instanceProfile) does not exist", name)}
			}
			return "", err
		}
		return name, nil
	}
	if nc.Spec.Role == "" {
		return "", fmt.Errorf("neither spec.role nor spec.instanceProfile is set")
	}
	role := RoleName(nc.Spec.Role)
	name := InstanceProfileName(r.cluster, r.region, nc.Name)
	profile, err := r.getProfile(ctx, name)
	switch {
	case sdk.IsNotFound(err):
		out, cerr := r.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Tags:                iamTags(r.profileTags(nc.Name)),
		})
		if cerr != nil && sdk.ErrorCode(cerr) != "EntityAlreadyExists" {
			return "", sdk.Wrap(cerr, "creating instance profile %s", name)
		}
		log.FromContext(ctx).Info("created instance profile", "instance-profile", name, "ec2nodeclass", nc.Name)
		if out != nil && out.InstanceProfile != nil {
			profile = out.InstanceProfile
		} else if profile, err = r.getProfile(ctx, name); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	default:
		if owner := r.cluster.Owner(tagsOf(profile.Tags)); owner != tags.Owned {
			return "", fmt.Errorf("instance profile %s exists but is not tagged as this cluster's (%s=%s); delete it or use spec.instanceProfile",
				name, tags.ClusterUID, r.cluster.UID)
		}
	}
	var attached []string
	for _, rl := range profile.Roles {
		attached = append(attached, aws.ToString(rl.RoleName))
	}
	if len(attached) == 1 && attached[0] == role {
		return name, nil
	}
	for _, old := range attached {
		if _, err := r.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: aws.String(old),
		}); err != nil && !sdk.IsNotFound(err) {
			return "", sdk.Wrap(err, "removing role %s from instance profile %s", old, name)
		}
	}
	if _, err := r.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
		InstanceProfileName: aws.String(name), RoleName: aws.String(role),
	}); err != nil {
		if sdk.IsNotFound(err) {
			return "", fmt.Errorf("role %q (spec.role) does not exist: %w", role, err)
		}
		return "", sdk.Wrap(err, "adding role %s to instance profile %s", role, name)
	}
	return name, nil
}

// DeleteInstanceProfile deletes the instance profile Dovetail created for the node class (none when the class
// names its own spec.instanceProfile). A profile not tagged as this cluster's is left alone.
func (r *Resolver) DeleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if nc.Spec.InstanceProfile != nil {
		return nil
	}
	return r.deleteOwnedProfile(ctx, InstanceProfileName(r.cluster, r.region, nc.Name), nc.Name)
}

// deleteOwnedProfile removes the roles of an instance profile tagged as this cluster's and deletes it (a profile
// already gone is no error; one not tagged as this cluster's is left alone).
func (r *Resolver) deleteOwnedProfile(ctx context.Context, name, nodeClass string) error {
	profile, err := r.getProfile(ctx, name)
	if sdk.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if owner := r.cluster.Owner(tagsOf(profile.Tags)); owner != tags.Owned {
		log.FromContext(ctx).Info("instance profile is not tagged as this cluster's; leaving it", "instance-profile", name)
		return nil
	}
	for _, rl := range profile.Roles {
		if _, err := r.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: rl.RoleName,
		}); err != nil && !sdk.IsNotFound(err) {
			return sdk.Wrap(err, "removing role from instance profile %s", name)
		}
	}
	if _, err := r.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !sdk.IsNotFound(err) {
		return sdk.Wrap(err, "deleting instance profile %s", name)
	}
	log.FromContext(ctx).Info("deleted instance profile", "instance-profile", name, "ec2nodeclass", nodeClass)
	return nil
}

func (r *Resolver) getProfile(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	out, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		if sdk.IsNotFound(err) {
			return nil, err
		}
		return nil, sdk.Wrap(err, "getting instance profile %s", name)
	}
	if out.InstanceProfile == nil {
		return nil, fmt.Errorf("getting instance profile %s: empty answer", name)
	}
	return out.InstanceProfile, nil
}

func (r *Resolver) profileTags(nodeClass string) map[string]string {
	t := r.cluster.ForNodeClassResource(nodeClass, nil)
	t[corev1.LabelTopologyRegion] = r.region
	return t
}

func iamTags(m map[string]string) []iamtypes.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]iamtypes.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func tagsOf(ts []iamtypes.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range ts {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}
