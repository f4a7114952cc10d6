package aws_test

import (
	"encoding/base64"
	"testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/launchtemplate"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// TestInstanceStoreRAID0ReachesTheSimulatedNode: the user data Dovetail writes for instanceStorePolicy RAID0 is
// read by the simulator, which then reports the instance store as the node's ephemeral storage (the capacity
// Dovetail announced for the NodeClaim).
func TestInstanceStoreRAID0ReachesTheSimulatedNode(t *testing.T) {
	for _, family := range []string{launchtemplate.FamilyAL2023, launchtemplate.FamilyAL2, launchtemplate.FamilyBottlerocket} {
		for _, raid := range []bool{false, true} {
			b := launchtemplate.Bootstrap{Family: family, ClusterName: "dovetail", Endpoint: "https://127.0.0.1:6443",
				CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", InstanceStoreRAID0: raid}
			ud, err := b.Render()
			if err != nil {
				t.Fatalf("%s: %v", family, err)
			}
			got, err := awssim.ParseUserData(base64.StdEncoding.EncodeToString([]byte(ud)))
			if err != nil {
				t.Fatalf("%s: simulator cannot parse the user data: %v\n%s", family, err, ud)
			}
			if got.InstanceStoreRAID0 != raid {
				t.Errorf("%s: simulator read InstanceStoreRAID0 %t, want %t\n%s", family, got.InstanceStoreRAID0, raid, ud)
			}
		}
	}
}
