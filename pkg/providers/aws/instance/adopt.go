package instance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// adoptChunk bounds the instance ids of one DescribeInstances filter and of one CreateTags call (EC2 accepts at
// most 200 values a filter).
const adoptChunk = 200

// AdoptResult is what Adopt found and did, by instance id.
type AdoptResult struct {
	// Owned are the instances that carry this cluster's identity now (adopted by this call or before).
	Owned map[string]bool
	// Adopted are the instances this call tagged, sorted.
	Adopted []string
	// Refused maps instances that exist but were not adopted to the reason.
	Refused map[string]string
}

// Claim is what a NodeClaim of this cluster says of the instance its provider ID names.
type Claim struct {
	// NodeClaim is the NodeClaim's name.
	NodeClaim string
	// Created is the NodeClaim's creation time.
	Created time.Time
	// Registered says a Node of this cluster carries the instance's provider ID.
	Registered bool
}

// AdoptionSkew is how much later than the instance's launch its NodeClaim may have been created and still count as
// the NodeClaim the instance was launched for (a controller creates the NodeClaim first; the API server's and EC2's
// clocks may differ by this much).
const AdoptionSkew = time.Minute

// Adopt gives this cluster's identity (the cluster-UID tag) to the instances that this cluster's NodeClaims name;
// claims maps an instance id to what its NodeClaim says. An instance is adopted when it is not terminated, carries
// this cluster's name tag (kubernetes.io/cluster/<name>) and no cluster-UID tag (the state Karpenter, and Dovetail
// releases before the UID tag, leave their instances in), its karpenter.sh/nodeclaim tag, when it has one, names that
// NodeClaim, and either a Node of this cluster carries its provider ID or the NodeClaim is older than the instance
// (less AdoptionSkew). A NodeClaim names an instance because this cluster's controller launched it for that
// NodeClaim; the last two conditions refuse the NodeClaims that name one for another reason, such as a backup of
// another cluster restored here: their Nodes are not restored, and they are younger than the instance. The launch
// templates of adopted instances (EC2's aws:ec2launchtemplate:id tag) are adopted too when they carry this cluster's
// name and no UID. Instances EC2 does not know are left out of the result (callers find them gone on their own
// look-up).
func (p *Provider) Adopt(ctx context.Context, claims map[string]Claim) (AdoptResult, error) {
	res := AdoptResult{Owned: map[string]bool{}, Refused: map[string]string{}}
	ids := slices.Sorted(maps.Keys(claims))
	var adopt []string
	launchTemplateOf := map[string]string{}
	for chunk := range slices.Chunk(ids, adoptChunk) {
		pager := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("instance-id"), Values: chunk},
		}})
		for pager.HasMorePages() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return res, sdk.Wrap(err, "describing %d instances to adopt", len(chunk))
			}
			for _, r := range page.Reservations {
				for _, i := range r.Instances {
					inst := convert(i)
					claim, asked := claims[inst.ID]
					if !asked {
						continue
					}
					name := claim.NodeClaim
					switch inst.State {
					case string(ec2types.InstanceStateNameTerminated), string(ec2types.InstanceStateNameShuttingDown):
						continue
					}
					switch o := p.cluster.Owner(inst.Tags); o {
					case tags.Owned:
						p.remember(inst.ID)
						res.Owned[inst.ID] = true
					case tags.NameOnly:
						if tagged, ok := inst.Tags[awsv1.TagNodeClaim]; ok && tagged != name {
							res.Refused[inst.ID] = fmt.Sprintf("its %s tag names NodeClaim %q, not %q", awsv1.TagNodeClaim, tagged, name)
							continue
						}
						if !claim.Registered && (claim.Created.IsZero() || claim.Created.After(inst.LaunchTime.Add(AdoptionSkew))) {
							res.Refused[inst.ID] = fmt.Sprintf("no Node of this cluster carries its provider ID and NodeClaim %s was created after it launched (%s)",
								name, inst.LaunchTime.UTC().Format(time.RFC3339))
							continue
						}
						adopt = append(adopt, inst.ID)
						launchTemplateOf[inst.ID] = inst.Tags[launchTemplateTag]
					default:
						res.Refused[inst.ID] = refusal(o)
					}
				}
			}
		}
	}
	identity := tags.EC2(map[string]string{tags.ClusterUID: p.cluster.UID})
	templates := map[string]bool{}
	for chunk := range slices.Chunk(adopt, adoptChunk) {
		if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: chunk, Tags: identity}); err != nil {
			return res, sdk.Wrap(err, "tagging %d adopted instances with %s", len(chunk), tags.ClusterUID)
		}
		for _, id := range chunk {
			p.remember(id)
			res.Owned[id] = true
			res.Adopted = append(res.Adopted, id)
			log.FromContext(ctx).Info("adopted instance", "instance-id", id, "nodeclaim", claims[id].NodeClaim, "tag", tags.ClusterUID)
		}
	}
	for _, id := range adopt {
		if lt := launchTemplateOf[id]; lt != "" {
			templates[lt] = true
		}
	}
	for _, lt := range slices.Sorted(maps.Keys(templates)) {
		if err := p.adoptLaunchTemplate(ctx, lt, identity); err != nil {
			return res, err
		}
	}
	return res, nil
}

// launchTemplateTag is the tag EC2 puts on an instance launched from a launch template, naming the template.
const launchTemplateTag = "aws:ec2launchtemplate:id"

// adoptLaunchTemplate gives this cluster's identity to the launch template an adopted instance was launched from,
// when it carries this cluster's name and no cluster UID (Karpenter's), so that deleting its EC2NodeClass deletes it
// too. A template that is gone or not this cluster's is left alone.
func (p *Provider) adoptLaunchTemplate(ctx context.Context, id string, identity []ec2types.Tag) error {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}})
	if err != nil {
		if sdk.IsNotFound(err) || sdk.IsLaunchTemplateNotFound(sdk.ErrorCode(err)) {
			return nil
		}
		return sdk.Wrap(err, "describing launch template %s of adopted instances", id)
	}
	for _, lt := range out.LaunchTemplates {
		if aws.ToString(lt.LaunchTemplateId) != id || p.cluster.Owner(tags.FromEC2(lt.Tags)) != tags.NameOnly {
			continue
		}
		if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: identity}); err != nil {
			return sdk.Wrap(err, "tagging adopted launch template %s with %s", id, tags.ClusterUID)
		}
		log.FromContext(ctx).Info("adopted launch template", "launch-template-id", id, "tag", tags.ClusterUID)
	}
	return nil
}

// KnownOwned reports whether the instance was seen carrying this cluster's identity (and is not known gone).
func (p *Provider) KnownOwned(id string) bool { return p.knownOwned(id) }

// refusal says why an instance of that ownership is not adopted.
func refusal(o tags.Ownership) string {
	if o == tags.OtherCluster {
		return "it carries another cluster's identity (" + tags.ClusterUID + ")"
	}
	return "it does not carry this cluster's name tag"
}
