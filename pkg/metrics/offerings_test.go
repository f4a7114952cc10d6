package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// TestInstanceTypeGauges: listing a NodePool's instance types publishes their vCPUs, memory (the instance-memory
// label, else the capacity) and each offering's availability; an offering available for one NodePool is
// available.
func TestInstanceTypeGauges(t *testing.T) {
	m := NewForTest()
	large := &cloudprovider.InstanceType{Name: "m5.large",
		Labels:   map[string]string{awsv1.LabelInstanceMemory: "8192"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("7Gi")},
		Offerings: []cloudprovider.Offering{
			{Zone: "us-west-2a", CapacityType: "spot", Available: false},
			{Zone: "us-west-2a", CapacityType: "on-demand", Available: true},
		}}
	small := &cloudprovider.InstanceType{Name: "t3.small",
		Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Offerings: []cloudprovider.Offering{{Zone: "us-west-2b", CapacityType: "spot", Available: true}}}
	m.InstanceTypeOfferingPrice.Record("a", []*cloudprovider.InstanceType{large})
	spotBack := *large
	spotBack.Offerings = []cloudprovider.Offering{{Zone: "us-west-2a", CapacityType: "spot", Available: true}}
	m.InstanceTypeOfferingPrice.Record("b", []*cloudprovider.InstanceType{&spotBack, small})
	want := `
# HELP karpenter_cloudprovider_instance_type_cpu_cores ` + helpOf("karpenter_cloudprovider_instance_type_cpu_cores") + `
# TYPE karpenter_cloudprovider_instance_type_cpu_cores gauge
karpenter_cloudprovider_instance_type_cpu_cores{instance_type="m5.large"} 2
karpenter_cloudprovider_instance_type_cpu_cores{instance_type="t3.small"} 2
# HELP karpenter_cloudprovider_instance_type_memory_bytes ` + helpOf("karpenter_cloudprovider_instance_type_memory_bytes") + `
# TYPE karpenter_cloudprovider_instance_type_memory_bytes gauge
karpenter_cloudprovider_instance_type_memory_bytes{instance_type="m5.large"} 8.589934592e+09
karpenter_cloudprovider_instance_type_memory_bytes{instance_type="t3.small"} 1.073741824e+09
# HELP karpenter_cloudprovider_instance_type_offering_available ` + helpOf("karpenter_cloudprovider_instance_type_offering_available") + `
# TYPE karpenter_cloudprovider_instance_type_offering_available gauge
karpenter_cloudprovider_instance_type_offering_available{capacity_type="on-demand",instance_type="m5.large",zone="us-west-2a"} 1
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="m5.large",zone="us-west-2a"} 1
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="t3.small",zone="us-west-2b"} 1
`
	if err := testutil.CollectAndCompare(m.InstanceTypes, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// A later listing for NodePool b without spot back makes the spot offering unavailable.
	m.InstanceTypeOfferingPrice.Record("b", []*cloudprovider.InstanceType{small})
	if err := testutil.CollectAndCompare(m.InstanceTypes, strings.NewReader(`
# HELP karpenter_cloudprovider_instance_type_offering_available `+helpOf("karpenter_cloudprovider_instance_type_offering_available")+`
# TYPE karpenter_cloudprovider_instance_type_offering_available gauge
karpenter_cloudprovider_instance_type_offering_available{capacity_type="on-demand",instance_type="m5.large",zone="us-west-2a"} 1
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="m5.large",zone="us-west-2a"} 0
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="t3.small",zone="us-west-2b"} 1
`), "karpenter_cloudprovider_instance_type_offering_available"); err != nil {
		t.Error(err)
	}
}
