package instancetype

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

func m5large() Info {
	return Info{
		Name: "m5.large", Architectures: []string{"x86_64"}, VCPU: 2, MemoryMiB: 8192,
		CPUManufacturer: "Intel", ClockSpeedGHz: 3.1, MaxENIs: 3, IPv4PerENI: 10,
		NetworkBandwidthMbps: 750, EBSBandwidthMbps: 650, Hypervisor: "nitro",
	}
}

func ptr[T any](v T) *T { return &v }

// quantities renders a ResourceList as strings so diffs are readable and exact.
func quantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func TestComputeCapacity(t *testing.T) {
	defaults := Settings{VMMemoryOverheadPercent: 0.075}
	cases := []struct {
		name     string
		info     Info
		kubelet  Kubelet
		settings Settings
		want     map[string]string
	}{
		{
			name: "m5.large defaults: ENI pods, 7.5% memory overhead, 20Gi storage", info: m5large(), settings: defaults,
			want: map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi"},
		},
		{
			name: "kubelet maxPods overrides ENI formula", info: m5large(), kubelet: Kubelet{MaxPods: ptr(int32(110))}, settings: defaults,
			want: map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "110", "ephemeral-storage": "20Gi"},
		},
		{
			name: "podsPerCore caps pods", info: m5large(), kubelet: Kubelet{PodsPerCore: ptr(int32(4))}, settings: defaults,
			want: map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "8", "ephemeral-storage": "20Gi"},
		},
		{
			name: "reserved ENIs and root volume", info: m5large(),
			settings: Settings{VMMemoryOverheadPercent: 0, ReservedENIs: 1, EphemeralStorage: resource.MustParse("100Gi")},
			want:     map[string]string{"cpu": "2", "memory": "8Gi", "pods": "20", "ephemeral-storage": "100Gi"},
		},
		{
			name:     "RAID0: instance store total replaces the root volume",
			info:     func() Info { i := m5large(); i.Name, i.LocalNVMe, i.LocalStorageGB = "m5d.large", true, 75; return i }(),
			settings: Settings{VMMemoryOverheadPercent: 0.075, EphemeralStorage: resource.MustParse("100Gi"), InstanceStoreRAID0: true},
			want:     map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "75G"},
		},
		{
			name: "RAID0 on a type without instance store keeps the root volume", info: m5large(),
			settings: Settings{VMMemoryOverheadPercent: 0.075, EphemeralStorage: resource.MustParse("100Gi"), InstanceStoreRAID0: true},
			want:     map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "100Gi"},
		},
		{
			name: "nvidia GPUs and neuron devices become extended resources",
			info: Info{Name: "g5.xlarge", Architectures: []string{"x86_64"}, VCPU: 4, MemoryMiB: 16384, MaxENIs: 4, IPv4PerENI: 15,
				GPUs: []Device{{Name: "A10G", Manufacturer: "NVIDIA", Count: 1, MemoryMiB: 24576}}},
			settings: defaults,
			want:     map[string]string{"cpu": "4", "memory": "15155Mi", "pods": "58", "ephemeral-storage": "20Gi", "nvidia.com/gpu": "1"},
		},
		{
			name: "inferentia",
			info: Info{Name: "inf2.xlarge", Architectures: []string{"x86_64"}, VCPU: 4, MemoryMiB: 16384, MaxENIs: 4, IPv4PerENI: 15,
				Accelerators: []Device{{Name: "Inferentia2", Manufacturer: "AWS", Count: 1}}},
			settings: defaults,
			want:     map[string]string{"cpu": "4", "memory": "15155Mi", "pods": "58", "ephemeral-storage": "20Gi", "aws.amazon.com/neuron": "1"},
		},
		{
			name: "trainium: neuron devices and their NeuronCores, EFA interfaces",
			info: Info{Name: "trn1.2xlarge", Architectures: []string{"x86_64"}, VCPU: 8, MemoryMiB: 32768, MaxENIs: 4, IPv4PerENI: 15,
				Accelerators: []Device{{Name: "Trainium", Manufacturer: "AWS", Count: 1, Cores: 2}}, MaxEFAInterfaces: 1},
			settings: defaults,
			want: map[string]string{"cpu": "8", "memory": "30310Mi", "pods": "58", "ephemeral-storage": "20Gi",
				"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2", "vpc.amazonaws.com/efa": "1"},
		},
		{
			name: "habana gaudi accelerators are GPUs of EC2",
			info: Info{Name: "dl1.24xlarge", Architectures: []string{"x86_64"}, VCPU: 96, MemoryMiB: 786432, MaxENIs: 60, IPv4PerENI: 50,
				GPUs: []Device{{Name: "Gaudi HL-205", Manufacturer: "Habana", Count: 8, MemoryMiB: 32768}}, MaxEFAInterfaces: 4},
			settings: defaults,
			want: map[string]string{"cpu": "96", "memory": "727449Mi", "pods": "2942", "ephemeral-storage": "20Gi",
				"habana.ai/gaudi": "8", "vpc.amazonaws.com/efa": "4"},
		},
		{
			name: "windows: secondary IPv4 addresses of the primary interface",
			info: m5large(), settings: Settings{VMMemoryOverheadPercent: 0.075, OS: "windows"},
			want: map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi",
				"vpc.amazonaws.com/PrivateIPv4Address": "9"},
		},
		{
			name: "no network figures: 110 pods", info: Info{Name: "x.large", VCPU: 1, MemoryMiB: 1024}, settings: defaults,
			want: map[string]string{"cpu": "1", "memory": "947Mi", "pods": "110", "ephemeral-storage": "20Gi"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compute(tc.info, tc.kubelet, tc.settings)
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			if d := cmp.Diff(tc.want, quantities(got.Capacity)); d != "" {
				t.Errorf("capacity (-want +got):\n%s", d)
			}
		})
	}
}

func TestComputeOverhead(t *testing.T) {
	cases := []struct {
		name    string
		info    Info
		kubelet Kubelet
		want    map[string]map[string]string
	}{
		{
			name: "EKS defaults for m5.large", info: m5large(),
			want: map[string]map[string]string{
				"kube":     {"cpu": "70m", "memory": "574Mi", "ephemeral-storage": "1Gi"},
				"system":   {},
				"eviction": {"memory": "100Mi", "ephemeral-storage": "2Gi"},
			},
		},
		{
			name: "16 vCPU: 60+10+5+5+12*2.5 millicores",
			info: Info{Name: "m5.4xlarge", VCPU: 16, MemoryMiB: 65536, MaxENIs: 8, IPv4PerENI: 30},
			want: map[string]map[string]string{
				"kube":     {"cpu": "110m", "memory": "2829Mi", "ephemeral-storage": "1Gi"},
				"system":   {},
				"eviction": {"memory": "100Mi", "ephemeral-storage": "2Gi"},
			},
		},
		{
			name: "user reserved and eviction values replace defaults per key", info: m5large(),
			kubelet: Kubelet{
				KubeReserved:   map[string]string{"cpu": "200m"},
				SystemReserved: map[string]string{"memory": "1Gi"},
				EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "1Gi"},
			},
			want: map[string]map[string]string{
				"kube":     {"cpu": "200m", "memory": "574Mi", "ephemeral-storage": "1Gi"},
				"system":   {"memory": "1Gi"},
				"eviction": {"memory": "397253018", "ephemeral-storage": "1Gi"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compute(tc.info, tc.kubelet, Settings{VMMemoryOverheadPercent: 0.075})
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			gotMap := map[string]map[string]string{
				"kube":     quantities(got.Overhead.KubeReserved),
				"system":   quantities(got.Overhead.SystemReserved),
				"eviction": quantities(got.Overhead.EvictionThreshold),
			}
			if d := cmp.Diff(tc.want, gotMap); d != "" {
				t.Errorf("overhead (-want +got):\n%s", d)
			}
		})
	}
}

func TestComputeRejectsBadInput(t *testing.T) {
	cases := []struct {
		name    string
		info    Info
		kubelet Kubelet
		s       Settings
	}{
		{name: "no name", info: Info{VCPU: 1, MemoryMiB: 1}},
		{name: "zero cpu", info: Info{Name: "a.b", MemoryMiB: 1}},
		{name: "overhead 1", info: m5large(), s: Settings{VMMemoryOverheadPercent: 1}},
		{name: "bad kubeReserved", info: m5large(), kubelet: Kubelet{KubeReserved: map[string]string{"cpu": "lots"}}},
		{name: "bad eviction percentage", info: m5large(), kubelet: Kubelet{EvictionHard: map[string]string{"memory.available": "150%"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Compute(tc.info, tc.kubelet, tc.s); err == nil {
				t.Errorf("Compute succeeded, want an error")
			}
		})
	}
}

func TestLabels(t *testing.T) {
	cases := []struct {
		name string
		info Info
		os   string
		want map[string]string
	}{
		{
			name: "m5.large", info: m5large(),
			want: map[string]string{
				"kubernetes.io/arch":                            "amd64",
				"kubernetes.io/os":                              "linux",
				"node.kubernetes.io/instance-type":              "m5.large",
				awsv1.LabelInstanceCategory:                     "m",
				awsv1.LabelInstanceFamily:                       "m5",
				awsv1.LabelInstanceGeneration:                   "5",
				awsv1.LabelInstanceSize:                         "large",
				awsv1.LabelInstanceCPU:                          "2",
				awsv1.LabelInstanceCPUManufacturer:              "intel",
				awsv1.LabelInstanceCPUSustainedClockSpeedMhz:    "3100",
				awsv1.LabelInstanceMemory:                       "8192",
				awsv1.LabelInstanceNetworkBandwidth:             "750",
				awsv1.LabelInstanceEBSBandwidth:                 "650",
				awsv1.LabelInstanceHypervisor:                   "nitro",
				awsv1.LabelInstanceEncryptionInTransitSupported: "false",
				awsv1.LabelNitroSandbox:                         "false",
				awsv1.LabelInstanceCapabilityFlex:               "false",
			},
		},
		{
			name: "flex family",
			info: Info{Name: "c7i-flex.large", Architectures: []string{"x86_64"}, VCPU: 2, MemoryMiB: 4096},
			want: map[string]string{
				"kubernetes.io/arch":                            "amd64",
				"kubernetes.io/os":                              "linux",
				"node.kubernetes.io/instance-type":              "c7i-flex.large",
				awsv1.LabelInstanceCategory:                     "c",
				awsv1.LabelInstanceFamily:                       "c7i-flex",
				awsv1.LabelInstanceGeneration:                   "7",
				awsv1.LabelInstanceSize:                         "large",
				awsv1.LabelInstanceCPU:                          "2",
				awsv1.LabelInstanceMemory:                       "4096",
				awsv1.LabelInstanceEncryptionInTransitSupported: "false",
				awsv1.LabelNitroSandbox:                         "false",
				awsv1.LabelInstanceCapabilityFlex:               "true",
			},
		},
		{
			name: "arm GPU type with local NVMe on windows",
			info: Info{Name: "g5g.2xlarge", Architectures: []string{"arm64"}, VCPU: 8, MemoryMiB: 16384, LocalNVMe: true, LocalStorageGB: 250,
				EncryptionInTransit: true, NitroEnclaves: true, GPUs: []Device{{Name: "T4g", Manufacturer: "NVIDIA", Count: 1, MemoryMiB: 16384}}},
			os: "windows",
			want: map[string]string{
				"kubernetes.io/arch":                            "arm64",
				"kubernetes.io/os":                              "windows",
				"node.kubernetes.io/instance-type":              "g5g.2xlarge",
				awsv1.LabelInstanceCategory:                     "g",
				awsv1.LabelInstanceFamily:                       "g5g",
				awsv1.LabelInstanceGeneration:                   "5",
				awsv1.LabelInstanceSize:                         "2xlarge",
				awsv1.LabelInstanceCPU:                          "8",
				awsv1.LabelInstanceMemory:                       "16384",
				awsv1.LabelInstanceEncryptionInTransitSupported: "true",
				awsv1.LabelNitroSandbox:                         "true",
				awsv1.LabelInstanceLocalNVME:                    "250",
				awsv1.LabelInstanceGPUName:                      "t4g",
				awsv1.LabelInstanceGPUManufacturer:              "nvidia",
				awsv1.LabelInstanceGPUCount:                     "1",
				awsv1.LabelInstanceGPUMemory:                    "16384",
				awsv1.LabelInstanceCapabilityFlex:               "false",
			},
		},
		{
			name: "hyphenated family",
			info: Info{Name: "u-6tb1.metal", Architectures: []string{"x86_64"}, VCPU: 448, MemoryMiB: 6291456, BareMetal: true},
			want: map[string]string{
				"kubernetes.io/arch":                            "amd64",
				"kubernetes.io/os":                              "linux",
				"node.kubernetes.io/instance-type":              "u-6tb1.metal",
				awsv1.LabelInstanceCategory:                     "u",
				awsv1.LabelInstanceFamily:                       "u-6tb1",
				awsv1.LabelInstanceGeneration:                   "1",
				awsv1.LabelInstanceSize:                         "metal",
				awsv1.LabelInstanceCPU:                          "448",
				awsv1.LabelInstanceMemory:                       "6291456",
				awsv1.LabelInstanceHypervisor:                   "",
				awsv1.LabelInstanceEncryptionInTransitSupported: "false",
				awsv1.LabelNitroSandbox:                         "false",
				awsv1.LabelInstanceCapabilityFlex:               "false",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Labels(tc.info, tc.os)); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
		})
	}
}
