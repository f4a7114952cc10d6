package instancetype

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

// TestFromEC2ExtendedResources: the EFA interfaces, NeuronCores and Habana accelerators DescribeInstanceTypes
// reports reach the capacity of the instance type, and trunking-compatible types offer their branch interfaces as
// vpc.amazonaws.com/pod-eni (figures as in Karpenter v1.14.3's table).
func TestFromEC2ExtendedResources(t *testing.T) {
	base := func(name string) ec2types.InstanceTypeInfo {
		return ec2types.InstanceTypeInfo{
			InstanceType:  ec2types.InstanceType(name),
			VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(8)},
			MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(32768)},
			ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureTypeX8664}},
			NetworkInfo:   &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(4), Ipv4AddressesPerInterface: aws.Int32(15)},
		}
	}
	trn := base("trn1.2xlarge")
	trn.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{
		Name: aws.String("Trainium"), Count: aws.Int32(1), CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(2), Version: aws.Int32(2)},
	}}}
	trn.NetworkInfo.EfaSupported = aws.Bool(true)
	trn.NetworkInfo.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(1)}
	dl := base("dl1.24xlarge")
	dl.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Name: aws.String("Gaudi HL-205"), Manufacturer: aws.String("Habana"), Count: aws.Int32(8)}}}
	noEFA := base("m5.2xlarge")
	noEFA.NetworkInfo.EfaSupported = aws.Bool(false)
	noEFA.NetworkInfo.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(1)}

	for _, tc := range []struct {
		in   ec2types.InstanceTypeInfo
		want map[string]string
	}{
		{trn, map[string]string{"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2", "vpc.amazonaws.com/efa": "1",
			"vpc.amazonaws.com/pod-eni": "17"}},
		{dl, map[string]string{"habana.ai/gaudi": "8", "vpc.amazonaws.com/pod-eni": "62"}},
		{noEFA, map[string]string{"vpc.amazonaws.com/pod-eni": "38"}},
		{base("c4.large"), map[string]string{}}, // Xen: not trunking-compatible
	} {
		shape, err := Compute(FromEC2(tc.in), Kubelet{}, Settings{VMMemoryOverheadPercent: 0.075})
		if err != nil {
			t.Fatalf("%s: %v", tc.in.InstanceType, err)
		}
		got := quantities(shape.Capacity)
		for _, k := range []string{"cpu", "memory", "pods", "ephemeral-storage"} {
			delete(got, k)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s extended resources (-want +got):\n%s", tc.in.InstanceType, d)
		}
	}
}
