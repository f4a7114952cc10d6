//go:build e2e

// Package ipv6 runs an IPv6 cluster on a local stack of its own: the simulator plays an IPv6 EKS cluster
// (awssim serve --ip-family ipv6: IPv6 service range in DescribeCluster, IPv6 subnets, an IPv6 address for
// each instance whose launch template asks for one, and no Node for an instance without one or whose kubelet
// has no IPv6 DNS address) whose subnets are IPv6-only (--ipv6-only-subnets: no IPv4 range, no private IPv4
// address, resource-name hostnames), and the API server gives the kube-dns Service an IPv6 ClusterIP. It is part
// of `make test-e2e`. Dual-stack subnets are covered by the simulator's and the provider's unit tests.
package ipv6

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack every test in this package shares; TestMain owns it.
var env *framework.Stack

// The stack starts without the controller: the kube-dns Service must exist before the controller reads it.
// DOVETAIL_E2E_PORT_BASE moves the stack's block of ports (packages run one at a time); DOVETAIL_E2E_KEEP=1
// leaves it running.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "e2e-ipv6", PortEnv: "DOVETAIL_E2E_PORT_BASE", KeepEnv: "DOVETAIL_E2E_KEEP",
		Stack: framework.Options{
			PortBase:      20400,
			NoController:  true,
			ControllerEnv: []string{"BATCH_IDLE_DURATION=500ms", "BATCH_MAX_DURATION=3s"},
			SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s",
				"--ip-family=ipv6", "--ipv6-only-subnets", "--service-ipv6-cidr=" + serviceIPv6CIDR},
		}}, &env))
}
