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

// TestNodeExtendedResources: nodes report the NeuronCores of their Neuron devices, Linux nodes of trunking-compatible
// types their branch interfaces, and Windows nodes the secondary IPv4 addresses of their primary interface, as the
// device plugin and the VPC resource controller (security groups for pods on) do.
func TestNodeExtendedResources(t *testing.T) {
	s := &Simulator{}
	trn := &catalog.InstanceType{Name: "trn1.2xlarge", VCPU: 8, MemoryMiB: 32768, MaxENIs: 4, IPv4PerENI: 15,
		Accelerators: []catalog.Accelerator{{Name: "Trainium", Manufacturer: "AWS", Count: 1}}}
	m5 := &catalog.InstanceType{Name: "m5.large", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}
	cases := []struct {
		name string
		it   *catalog.InstanceType
		b    Bootstrap
		want map[string]string
	}{
		{"trainium", trn, Bootstrap{Format: "al2023"}, map[string]string{"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2",
			"vpc.amazonaws.com/pod-eni": "17"}},
		{"windows", m5, Bootstrap{Format: "windows"}, map[string]string{"vpc.amazonaws.com/PrivateIPv4Address": "9"}},
		{"linux: branch interfaces for security groups for pods", m5, Bootstrap{Format: "al2023"}, map[string]string{"vpc.amazonaws.com/pod-eni": "9"}},
		{"linux, not trunking-compatible", &catalog.InstanceType{Name: "c4.large", VCPU: 2, MemoryMiB: 3840, MaxENIs: 3, IPv4PerENI: 10},
			Bootstrap{Format: "al2023"}, map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := s.buildNodeSpec(&instance{ID: "i-1", Type: tc.it.Name, Arch: "x86_64", RootGiB: 50}, tc.it, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range spec.Capacity {
				switch k {
				case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
				default:
					got[string(k)] = v.String()
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("extended resources (-want +got):\n%s", d)
			}
		})
	}
}
