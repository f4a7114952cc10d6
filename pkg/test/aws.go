package test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

// EC2NodeClassBuilder builds EC2NodeClasses for tests.
type EC2NodeClassBuilder struct{ nc *awsv1.EC2NodeClass }

// EC2NodeClass starts an EC2NodeClass using al2023@latest, subnets and security groups tagged
// karpenter.sh/discovery=<discovery> and the role KarpenterNodeRole-<discovery>.
func EC2NodeClass(name, discovery string) *EC2NodeClassBuilder {
	tags := map[string]string{"karpenter.sh/discovery": discovery}
	return &EC2NodeClassBuilder{nc: &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: tags}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: tags}},
			Role:                       "KarpenterNodeRole-" + discovery,
		},
	}}
}

// Alias replaces the AMI selector with one alias term.
func (b *EC2NodeClassBuilder) Alias(alias string) *EC2NodeClassBuilder {
	b.nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
	return b
}

// SubnetIDs replaces the subnet selector with one id term per subnet.
func (b *EC2NodeClassBuilder) SubnetIDs(ids ...string) *EC2NodeClassBuilder {
	b.nc.Spec.SubnetSelectorTerms = nil
	for _, id := range ids {
		b.nc.Spec.SubnetSelectorTerms = append(b.nc.Spec.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: id})
	}
	return b
}

// InstanceProfile uses an existing instance profile instead of the role.
func (b *EC2NodeClassBuilder) InstanceProfile(name string) *EC2NodeClassBuilder {
	b.nc.Spec.Role = ""
	b.nc.Spec.InstanceProfile = &name
	return b
}

// Tag adds a spec.tags entry.
func (b *EC2NodeClassBuilder) Tag(key, value string) *EC2NodeClassBuilder {
	if b.nc.Spec.Tags == nil {
		b.nc.Spec.Tags = map[string]string{}
	}
	b.nc.Spec.Tags[key] = value
	return b
}

// UserData sets spec.userData.
func (b *EC2NodeClassBuilder) UserData(s string) *EC2NodeClassBuilder {
	b.nc.Spec.UserData = &s
	return b
}

// Status sets resolved status fields, as the node class controller would.
func (b *EC2NodeClassBuilder) Status(s awsv1.EC2NodeClassStatus) *EC2NodeClassBuilder {
	b.nc.Status = s
	return b
}

// Obj returns a copy of the built object.
func (b *EC2NodeClassBuilder) Obj() *awsv1.EC2NodeClass { return b.nc.DeepCopy() }
