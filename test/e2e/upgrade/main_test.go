//go:build e2e

// Package upgrade runs a control-plane upgrade on a local stack of its own: the simulated EKS cluster moves to
// the next Kubernetes minor version while the controller runs, which must not reach the other scenarios' nodes.
// The controller reads the version from EKS DescribeCluster (EKS_CONTROL_PLANE=true) every few seconds
// (KUBERNETES_VERSION_REFRESH_INTERVAL) instead of every 5 minutes, so the scenario stays short. It is part of
// `make test-e2e`.
package upgrade

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack every test in this package shares; TestMain owns it.
var env *framework.Stack

// DOVETAIL_E2E_PORT_BASE moves the stack's block of ports (packages run one at a time); DOVETAIL_E2E_KEEP=1
// leaves it running.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "e2e-upgrade", PortEnv: "DOVETAIL_E2E_PORT_BASE", KeepEnv: "DOVETAIL_E2E_KEEP",
		Stack: framework.Options{
			PortBase: 20600,
			ControllerEnv: []string{"BATCH_IDLE_DURATION=500ms", "BATCH_MAX_DURATION=3s",
				"EKS_CONTROL_PLANE=true", "KUBERNETES_VERSION_REFRESH_INTERVAL=5s"},
			SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s", "--kubernetes-version=1.34"},
		}}, &env))
}
