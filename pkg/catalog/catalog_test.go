package catalog

import (
	"bytes"
	"testing"
)

func TestLoadCoverage(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := len(c.Types); got < 500 {
		t.Errorf("catalog has %d types, want at least 500", got)
	}
	families := map[string]bool{}
	arches := map[string]bool{}
	for i := range c.Types {
		families[c.Types[i].Category] = true
		for _, a := range c.Types[i].KubeArchitectures() {
			arches[a] = true
		}
	}
	for _, f := range []string{"c", "m", "r", "t", "i", "g", "p", "x", "z"} {
		if !families[f] {
			t.Errorf("catalog lacks category %q", f)
		}
	}
	for _, a := range []string{"amd64", "arm64"} {
		if !arches[a] {
			t.Errorf("catalog lacks architecture %q", a)
		}
	}
	r, ok := c.Region("us-west-2")
	if !ok {
		t.Fatal("catalog lacks us-west-2")
	}
	priced := 0
	for _, z := range r.Zones {
		m5, ok := c.Type("m5.large")
		if !ok {
			t.Fatal("catalog lacks m5.large")
		}
		if _, ok := m5.SpotPrice("us-west-2", z.Name); ok {
			priced++
		}
	}
	if priced < 3 {
		t.Errorf("m5.large has spot prices in %d us-west-2 zones, want >= 3", priced)
	}
	if od, ok := c.Types[0].OnDemandPrice("us-west-2"); ok && od <= 0 {
		t.Errorf("non-positive on-demand price %v", od)
	}
}

func TestKnownShapes(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		name            string
		vcpu            int
		memMiB          int64
		enis, ips       int
		arch            string
		gpus            int
		category        string
		generation      int
		cpuManufacturer string
	}{
		{"m5.large", 2, 8192, 3, 10, "amd64", 0, "m", 5, "Intel"},
		{"m7g.large", 2, 8192, 3, 10, "arm64", 0, "m", 7, "AWS"},
		{"p4d.24xlarge", 96, 1179648, 60, 50, "amd64", 8, "p", 4, "Intel"},
		{"t3.micro", 2, 1024, 2, 2, "amd64", 0, "t", 3, "Intel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := c.Type(tc.name)
			if !ok {
				t.Fatalf("missing %s", tc.name)
			}
			if it.VCPU != tc.vcpu || it.MemoryMiB != tc.memMiB || it.MaxENIs != tc.enis || it.IPv4PerENI != tc.ips ||
				it.GPUCount() != tc.gpus || it.Category != tc.category || it.Generation != tc.generation ||
				it.CPUManufacturer != tc.cpuManufacturer {
				t.Errorf("got %+v", it)
			}
			if a := it.KubeArchitectures(); len(a) != 1 || a[0] != tc.arch {
				t.Errorf("arch = %v, want %s", a, tc.arch)
			}
		})
	}
}

func TestEncodeDeterministic(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var a, b bytes.Buffer
	if err := Encode(&a, c); err != nil {
		t.Fatal(err)
	}
	if err := Encode(&b, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two encodings differ")
	}
	if !bytes.Equal(a.Bytes(), embedded) {
		t.Error("re-encoding the embedded catalog changes it: regenerate with go run ./hack/gen-catalog")
	}
}

func TestBranchENIs(t *testing.T) {
	for name, want := range map[string]int{"m5.large": 9, "m6g.large": 9, "c4.large": 0, "t3.micro": 0, "no.such": 0} {
		if got := BranchENIs(name); got != want {
			t.Errorf("BranchENIs(%s) = %d, want %d", name, got, want)
		}
	}
}
