//go:build e2e

// Package v115 runs Karpenter v1.15's scheduling scenarios on a local stack of its own: the kube-scheduler runs
// with podTopologySpread default constraints and the controller with the same constraints in SCHEDULER_CONFIG
// (other packages' scenarios would be spread by them too), and a CSI driver's attach limits are reported on
// CSINodes. It is part of `make test-e2e`.
package v115

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack every test in this package shares; TestMain owns it.
var env *framework.Stack

// schedulerConfig is the controller's SCHEDULER_CONFIG: one default constraint, pods of a workload spread over
// zones with a skew of at most 1 (JSON, without spaces: the stack splits the controller's environment on them).
const schedulerConfig = `{"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}}`

// kubeSchedulerConfig gives the stack's kube-scheduler the same default constraint.
const kubeSchedulerConfig = `profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`

// DOVETAIL_E2E_PORT_BASE moves the stack's block of ports (packages run one at a time); DOVETAIL_E2E_KEEP=1
// leaves it running.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "e2e-v115", PortEnv: "DOVETAIL_E2E_PORT_BASE", KeepEnv: "DOVETAIL_E2E_KEEP",
		Stack: framework.Options{
			PortBase: 20000,
			ControllerEnv: []string{
				"BATCH_IDLE_DURATION=500ms",
				"BATCH_MAX_DURATION=3s",
				"REGISTRATION_TIMEOUT=60s",
				"SCHEDULER_CONFIG=" + schedulerConfig,
			},
			SimulatorFlags:      []string{"--pending-duration=500ms", "--shutting-down-duration=1s"},
			KubeSchedulerConfig: kubeSchedulerConfig,
		}}, &env))
}
