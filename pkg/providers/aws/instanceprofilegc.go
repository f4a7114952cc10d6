package aws

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
)

// CollectInstanceProfiles deletes the instance profiles Dovetail created for this cluster in this region that
// nothing needs any more: no EC2NodeClass of classes names it (status.instanceProfile, or the profile made for
// its spec.role), no live instance was launched with its node class, and it is older than
// resolve.InstanceProfileProtection. It returns the names it deleted.
func (p *CloudProvider) CollectInstanceProfiles(ctx context.Context, classes []awsv1.EC2NodeClass) ([]string, error) {
	owned, err := p.resolver.OwnedInstanceProfiles(ctx)
	if err != nil || len(owned) == 0 {
		return nil, err
	}
	insts, err := p.instances.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	used := make([]string, 0, len(insts))
	for _, inst := range insts {
		used = append(used, inst.Tags[awsv1.TagNodeClass])
	}
	doomed := resolve.ProfilesToCollect(owned, p.resolver.InstanceProfilesInUse(classes, used), p.clock.Now())
	byName := map[string]resolve.OwnedProfile{}
	for _, o := range owned {
		byName[o.Name] = o
	}
	var deleted []string
	var errs []error
	for _, name := range doomed {
		if err := p.resolver.DeleteOwnedInstanceProfile(ctx, byName[name]); err != nil {
			errs = append(errs, err)
			continue
		}
		log.FromContext(ctx).Info("garbage-collected an instance profile no node class or instance uses",
			"instance-profile", name, "ec2nodeclass", byName[name].NodeClass)
		deleted = append(deleted, name)
	}
	return deleted, errors.Join(errs...)
}
