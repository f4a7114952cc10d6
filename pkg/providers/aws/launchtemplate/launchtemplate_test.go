package launchtemplate

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

func nodeClass(alias string, mutate func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
	if mutate != nil {
		mutate(nc)
	}
	return nc
}

func TestEphemeralStorage(t *testing.T) {
	q := resource.MustParse("100Gi")
	cases := []struct {
		name string
		nc   *awsv1.EC2NodeClass
		want string
	}{
		{"al2023 default", nodeClass("al2023@latest", nil), "20Gi"},
		{"bottlerocket data volume", nodeClass("bottlerocket@latest", nil), "20Gi"},
		{"explicit root volume", nodeClass("al2023@latest", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
				{DeviceName: aws.String("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &q}, RootVolume: true},
			}
		}), "100Gi"},
		{"no size", nodeClass("al2023@latest", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvdz")}}
		}), "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := EphemeralStorage(tc.nc)
			if got.String() != tc.want {
				t.Errorf("EphemeralStorage = %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func TestDataAndName(t *testing.T) {
	cluster := tags.Cluster{Name: "demo", UID: "u1"}
	nc := nodeClass("al2023@latest", nil)
	spec := Spec{NodeClass: nc, ImageID: "ami-1", UserData: "hello", SecurityGroupIDs: []string{"sg-1"}, InstanceProfile: "prof"}
	d := Data(spec)
	if ud, _ := base64.StdEncoding.DecodeString(aws.ToString(d.UserData)); string(ud) != "hello" {
		t.Errorf("user data = %q, want base64 of hello", aws.ToString(d.UserData))
	}
	if len(d.SecurityGroupIds) != 1 || d.NetworkInterfaces != nil {
		t.Errorf("security groups should be on the template without public IP setting: %+v", d)
	}
	if aws.ToInt32(d.BlockDeviceMappings[0].Ebs.VolumeSize) != 20 || d.MetadataOptions.HttpTokens != "required" {
		t.Errorf("defaults not applied: %+v %+v", d.BlockDeviceMappings[0].Ebs, d.MetadataOptions)
	}
	nc.Spec.AssociatePublicIPAddress = aws.Bool(false)
	d = Data(spec)
	if len(d.NetworkInterfaces) != 1 || d.SecurityGroupIds != nil {
		t.Errorf("associatePublicIPAddress should move security groups to the network interface: %+v", d)
	}
	a, _ := Name(cluster, spec)
	spec2 := spec
	spec2.ImageID = "ami-2"
	b, _ := Name(cluster, spec2)
	c, _ := Name(tags.Cluster{Name: "demo", UID: "u2"}, spec)
	again, _ := Name(cluster, spec)
	if a == b || a == c || a != again {
		t.Errorf("names must differ by image and cluster and be stable: %s %s %s %s", a, b, c, again)
	}
}
