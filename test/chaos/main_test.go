//go:build chaos

// Package chaos kills the controller at random moments during rounds of scale-out, scale-in and drift on the
// local stack and checks, after each round, that nothing leaked, was orphaned or launched twice.
// Run it with `make test-chaos` (CHAOS_ROUNDS, default 30) or, shorter, as
// `go test -tags chaos -run TestChaos ./test/chaos/` (3 rounds unless CHAOS_ROUNDS is set).
package chaos

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

var env *framework.Stack

// DOVETAIL_CHAOS_PORT_BASE moves the stack's ports (default 19400, apart from the demo's, the e2e tests' and the
// benchmarks').
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "chaos", PortEnv: "DOVETAIL_CHAOS_PORT_BASE", Stack: framework.Options{
		PortBase: 19400,
		ControllerEnv: []string{
			"BATCH_IDLE_DURATION=500ms",
			"BATCH_MAX_DURATION=3s",
			"REGISTRATION_TIMEOUT=60s",
			// The simulator creates a queue named after the cluster; the interruption action sends into it.
			"INTERRUPTION_QUEUE=dovetail",
		},
		SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s"},
	}}, &env))
}
