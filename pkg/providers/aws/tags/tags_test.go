package tags

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestForInstance(t *testing.T) {
	c := Cluster{Name: "demo", UID: "uid-1"}
	got := c.ForInstance(Instance{
		NodePool: "default", NodeClaim: "default-abcde", NodeClass: "default",
		NodeClassTags: map[string]string{"team": "a", "karpenter.sh/nodepool": "spoofed", "Name": "custom"},
	})
	want := map[string]string{
		"Name":                           "custom",
		"team":                           "a",
		"kubernetes.io/cluster/demo":     "owned",
		"eks:eks-cluster-name":           "demo",
		"dovetail.sh/cluster-uid":        "uid-1",
		"karpenter.sh/nodepool":          "default",
		"karpenter.sh/nodeclaim":         "default-abcde",
		"karpenter.k8s.aws/ec2nodeclass": "default",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tags (-want +got):\n%s", d)
	}
	if n := c.ForInstance(Instance{NodeClaim: "x"})["Name"]; n != "x" {
		t.Errorf("Name = %q, want the NodeClaim name when the node class sets none", n)
	}
}

func TestOwner(t *testing.T) {
	c := Cluster{Name: "demo", UID: "uid-1"}
	cases := []struct {
		name string
		tags map[string]string
		want Ownership
	}{
		{"owned", map[string]string{"kubernetes.io/cluster/demo": "owned", ClusterUID: "uid-1"}, Owned},
		{"name only", map[string]string{"kubernetes.io/cluster/demo": "owned"}, NameOnly},
		{"same name other cluster", map[string]string{"kubernetes.io/cluster/demo": "owned", ClusterUID: "uid-2"}, OtherCluster},
		{"foreign", map[string]string{"kubernetes.io/cluster/other": "owned", ClusterUID: "uid-1"}, Foreign},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Owner(tc.tags); got != tc.want {
				t.Errorf("Owner = %v, want %v", got, tc.want)
			}
		})
	}
}
