package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/catalog"
)

func TestDeviceModels(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "models:\n- instanceTypes: [m5.large]\n  driver: fpga.example.com\n  devices:\n  - name: fpga\n    count: 2\n")
	bad := write("bad.yaml", "models:\n- instanceTypes: [m5.large]\n  driver: fpga.example.com\n  devicez: []\n")
	tests := []struct {
		name      string
		drivers   []string
		file      string
		nodeType  string
		want      []string // driver of each slice
		wantErr   string
		wantNoMod bool
	}{
		{name: "nothing asked: no models", wantNoMod: true},
		{name: "GPU driver only", drivers: []string{"gpu.nvidia.com"}, nodeType: "g5.12xlarge", want: []string{"gpu.nvidia.com"}},
		{name: "both drivers", drivers: []string{"gpu.nvidia.com", "dra.net"}, nodeType: "g5.12xlarge", want: []string{"dra.net", "gpu.nvidia.com"}},
		{name: "no devices on a plain type", drivers: []string{"gpu.nvidia.com", "dra.net"}, nodeType: "m5.large"},
		{name: "override file alone", file: good, nodeType: "m5.large", want: []string{"fpga.example.com"}},
		{name: "unknown driver", drivers: []string{"amd.com/gpu"}, wantErr: `unknown driver "amd.com/gpu"`},
		{name: "bad override file", file: bad, wantErr: "devicez"},
		{name: "missing override file", file: filepath.Join(dir, "absent.yaml"), wantErr: "--dra-device-models"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := deviceModels(cat, tc.drivers, tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNoMod {
				if m != nil {
					t.Fatalf("models = %v, want none", m)
				}
				return
			}
			var got []string
			for _, s := range m.Slices(tc.nodeType, "node-a") {
				if s.Spec.NodeName == nil || *s.Spec.NodeName != "node-a" {
					t.Errorf("slice %s is not on node-a", s.Name)
				}
				if len(got) == 0 || got[len(got)-1] != s.Spec.Driver {
					got = append(got, s.Spec.Driver)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("drivers of the slices (-want +got):\n%s", d)
			}
		})
	}
}
