package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCountInstanceFailures(t *testing.T) {
	m := NewForTest()
	m.CountLaunchFailure("spot", "LaunchFailed", "us-west-2a", "usw2-az1")
	m.CountLaunchFailure("spot", "LaunchFailed", "us-west-2a", "usw2-az1")
	m.CountTerminationFailure("us-west-2b", "usw2-az2")
	want := `
# HELP karpenter_cloudprovider_instance_launch_failures_total ` + helpOf("karpenter_cloudprovider_instance_launch_failures_total") + `
# TYPE karpenter_cloudprovider_instance_launch_failures_total counter
karpenter_cloudprovider_instance_launch_failures_total{capacity_type="spot",reason="LaunchFailed",zone="us-west-2a",zone_id="usw2-az1"} 2
# HELP karpenter_cloudprovider_instance_termination_failures_total ` + helpOf("karpenter_cloudprovider_instance_termination_failures_total") + `
# TYPE karpenter_cloudprovider_instance_termination_failures_total counter
karpenter_cloudprovider_instance_termination_failures_total{zone="us-west-2b",zone_id="usw2-az2"} 1
`
	if err := testutil.CollectAndCompare(m.InstanceLaunchFailures, strings.NewReader(want), "karpenter_cloudprovider_instance_launch_failures_total"); err != nil {
		t.Error(err)
	}
	if err := testutil.CollectAndCompare(m.InstanceTerminationFailures, strings.NewReader(want), "karpenter_cloudprovider_instance_termination_failures_total"); err != nil {
		t.Error(err)
	}
}

func TestUserDataBytes(t *testing.T) {
	m := NewForTest()
	m.SetUserDataBytes("default", 1200)
	m.SetUserDataBytes("gpu", 900)
	m.SetUserDataBytes("default", 1300)
	m.DeleteUserDataBytes("gpu")
	want := `
# HELP karpenter_ec2nodeclasses_userdata_bytes ` + helpOf("karpenter_ec2nodeclasses_userdata_bytes") + `
# TYPE karpenter_ec2nodeclasses_userdata_bytes gauge
karpenter_ec2nodeclasses_userdata_bytes{nodeclass="default"} 1300
`
	if err := testutil.CollectAndCompare(m.EC2NodeClassUserDataBytes, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
