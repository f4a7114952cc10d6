package launchtemplate

import (
	"strings"
	"testing"
)

// TestInstanceStoreRAID0UserData: instanceStorePolicy RAID0 reaches each family's bootstrap in its own words;
// without it none of them is written.
func TestInstanceStoreRAID0UserData(t *testing.T) {
	cases := []struct {
		family string
		want   []string
	}{
		{FamilyAL2023, []string{"  instance:\n    localStorage:\n      strategy: RAID0\n"}},
		{FamilyAL2, []string{"--local-disks raid0\n"}},
		{FamilyBottlerocket, []string{
			`[settings.bootstrap-commands."000-mount-instance-storage"]`,
			`commands = [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]]`,
			`mode = "always"`,
			`essential = true`,
		}},
	}
	for _, c := range cases {
		t.Run(c.family, func(t *testing.T) {
			b := sample(c.family, "")
			plain, err := b.Render()
			if err != nil {
				t.Fatal(err)
			}
			b.InstanceStoreRAID0 = true
			raid, err := b.Render()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(raid, w) {
					t.Errorf("RAID0 user data lacks %q:\n%s", w, raid)
				}
				if strings.Contains(plain, w) {
					t.Errorf("user data without RAID0 has %q", w)
				}
			}
		})
	}
}
