package awssim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// TestNodeOSFromBootstrap checks that a node bootstrapped by the Windows PowerShell user data registers as a
// Windows node, with the build label the bootstrap passes, and that other formats stay Linux.
func TestNodeOSFromBootstrap(t *testing.T) {
	s := &Simulator{}
	it := &catalog.InstanceType{Name: "m5.large", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}
	cases := []struct {
		name string
		b    Bootstrap
		want map[string]string
	}{
		{"windows", Bootstrap{Format: "windows", Labels: map[string]string{corev1.LabelWindowsBuild: "10.0.26100"}},
			map[string]string{corev1.LabelOSStable: "windows", "beta.kubernetes.io/os": "windows", corev1.LabelWindowsBuild: "10.0.26100"}},
		{"al2023", Bootstrap{Format: "al2023"}, map[string]string{corev1.LabelOSStable: "linux", "beta.kubernetes.io/os": "linux", corev1.LabelWindowsBuild: ""}},
		{"none", Bootstrap{}, map[string]string{corev1.LabelOSStable: "linux", "beta.kubernetes.io/os": "linux", corev1.LabelWindowsBuild: ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := s.buildNodeSpec(&instance{ID: "i-1", Type: "m5.large", Arch: "x86_64", RootGiB: 50}, it, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k := range tc.want {
				got[k] = spec.Labels[k]
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
		})
	}
}
