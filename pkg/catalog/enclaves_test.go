package catalog

import "testing"

func TestNitroEnclaves(t *testing.T) {
	cases := []struct {
		t    InstanceType
		want bool
	}{
		{InstanceType{Name: "m5.xlarge", Hypervisor: "nitro", VCPU: 4}, true},
		{InstanceType{Name: "m5.large", Hypervisor: "nitro", VCPU: 2}, false},
		{InstanceType{Name: "t3.xlarge", Hypervisor: "nitro", VCPU: 4}, false},
		{InstanceType{Name: "m4.xlarge", Hypervisor: "xen", VCPU: 4}, false},
		{InstanceType{Name: "m5.metal", VCPU: 96}, false},
	}
	for _, c := range cases {
		if got := c.t.NitroEnclaves(); got != c.want {
			t.Errorf("%s: NitroEnclaves() = %v, want %v", c.t.Name, got, c.want)
		}
	}
}
