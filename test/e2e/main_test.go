//go:build e2e

// Package e2e holds whole-system scenarios on the local stack: a real control plane, kwok kubelets, the AWS
// simulator and the Dovetail controller as separate processes. Run with `make test-e2e` (part of `make test`).
package e2e

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack every test in this package shares; TestMain owns it. Tests isolate themselves by using their
// own NodePool, EC2NodeClass and namespace names.
var env *framework.Stack

// DOVETAIL_E2E_PORT_BASE lets several e2e runs share a machine (each needs its own block of ports);
// DOVETAIL_E2E_KEEP=1 leaves the stack running and its logs in place after the tests.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "e2e", PortEnv: "DOVETAIL_E2E_PORT_BASE", KeepEnv: "DOVETAIL_E2E_KEEP", Stack: framework.Options{
		PortBase: 17400,
		ControllerEnv: []string{
			"BATCH_IDLE_DURATION=500ms",
			"BATCH_MAX_DURATION=3s",
			// registration_test.go waits out this timeout (registrationTimeout). Nodes here join in seconds: at most
			// 15 s from NodeClaim creation in the 200-node TestUninitializedTaintRace on a loaded machine.
			"REGISTRATION_TIMEOUT=60s",
			// The simulator creates a queue named after the cluster in every account (interruption_test.go).
			"INTERRUPTION_QUEUE=dovetail",
			// repair_test.go: node repair on, with the KernelReady toleration shortened to repairToleration. The
			// other policies keep the provider's 30 minutes, longer than any scenario keeps a node NotReady.
			// static_test.go: static NodePools (repairv115_test.go: drifted terminate-first at limits.nodes, and an
			// unhealthy node terminate-first at a NodePool's limits). capacitybuffer_test.go: CapacityBuffers. nodeoverlay_test.go: NodeOverlays.
			"FEATURE_GATES=NodeRepair=true,StaticCapacity=true,CapacityBuffer=true,NodeOverlay=true,TerminateFirstDrift=true,TerminateFirstRepair=true",
			// repairreboot_test.go: reboot repair (AcceleratedHardwareReady with a GPU fault a reboot clears), its
			// toleration shortened like KernelReady's, and a node not back from its reboot replaced after 30 s.
			"AWS_FEATURE_GATES=RebootForRepair=true",
			"NODE_REPAIR_TOLERATIONS=KernelReady=20s,AcceleratedHardwareReady=20s",
			"REBOOT_OBSERVATION_WINDOW=30s",
			// zonalshift_test.go: ARC zonal shifts followed (the simulator knows the cluster; no shift unless a test starts one).
			"ENABLE_ZONAL_SHIFT=true",
		},
		SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s"},
	}}, &env))
}
