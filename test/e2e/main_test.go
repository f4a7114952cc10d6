//go:build e2e

// Package e2e holds whole-system scenarios on the local stack: a real control plane, kwok kubelets, the AWS
// simulator and the Dovetail controller as separate processes. Run with `make test-e2e` (part of `make test`).
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack every test in this package shares; TestMain owns it. Tests isolate themselves by using their
// own NodePool, EC2NodeClass and namespace names.
var env *framework.Stack

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	state, err := os.MkdirTemp("", "dovetail-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// DOVETAIL_E2E_PORT_BASE lets several e2e runs share a machine (each needs its own block of ports).
	portBase := 17400
	if v := os.Getenv("DOVETAIL_E2E_PORT_BASE"); v != "" {
		if portBase, err = strconv.Atoi(v); err != nil || portBase < 1024 || portBase > 65000 {
			fmt.Fprintf(os.Stderr, "e2e: DOVETAIL_E2E_PORT_BASE=%q: want a port number between 1024 and 65000\n", v)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	env, err = framework.Up(ctx, framework.Options{
		StateDir: state,
		PortBase: portBase,
		ControllerEnv: []string{
			"BATCH_IDLE_DURATION=500ms",
			"BATCH_MAX_DURATION=3s",
			// registration_test.go waits out this timeout (registrationTimeout). Nodes here join in seconds: at most
			// 15 s from NodeClaim creation in the 200-node TestUninitializedTaintRace on a loaded machine.
			"REGISTRATION_TIMEOUT=60s",
			// The simulator creates a queue named after the cluster in every account (interruption_test.go).
			"INTERRUPTION_QUEUE=dovetail",
		},
		SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s"},
	})
	defer func() {
		downCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env.Down(downCtx); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the stack:", err)
		}
		_ = os.RemoveAll(state)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the stack:", err)
		fmt.Fprintln(os.Stderr, "--- dovetail log ---\n"+env.LogTail("dovetail", 40))
		fmt.Fprintln(os.Stderr, "--- awssim log ---\n"+env.LogTail("awssim", 40))
		return 1
	}
	fmt.Printf("e2e: stack up in %.1fs (state %s)\n", time.Since(start).Seconds(), state)
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "--- dovetail log (last 80 lines) ---\n"+env.LogTail("dovetail", 80))
		fmt.Fprintln(os.Stderr, "--- awssim log (last 40 lines) ---\n"+env.LogTail("awssim", 40))
	}
	return code
}
