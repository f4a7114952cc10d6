//go:build e2e

// Package dra runs Dynamic Resource Allocation scenarios on a local stack of its own: the simulator publishes the
// ResourceSlices of the NVIDIA GPU and dranet (EFA) drivers on each GPU Node (awssim serve --dra-drivers), the
// real kube-scheduler's DRA plugin allocates the claims, kwok runs the pods, and the controller provisions for
// claims (IGNORE_DRA_REQUESTS=false, AWS gates DRANVIDIAGPU and DRAEFA). It is part of `make test-e2e`.
package dra

import (
	"context"
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack every test in this package shares; TestMain owns it.
var env *framework.Stack

// controllerEnv is how the scenarios that provision run the controller.
var controllerEnv = []string{
	"BATCH_IDLE_DURATION=500ms",
	"BATCH_MAX_DURATION=3s",
	"REGISTRATION_TIMEOUT=60s",
	"IGNORE_DRA_REQUESTS=false",
	"AWS_FEATURE_GATES=DRANVIDIAGPU=true,DRAEFA=true",
}

// The stack starts without the controller: the scenarios that only exercise the simulator and the
// kube-scheduler need none, and startController starts it for those that provision.
// DOVETAIL_E2E_PORT_BASE moves the stack's block of ports (packages run one at a time); DOVETAIL_E2E_KEEP=1
// leaves it running.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "e2e-dra", PortEnv: "DOVETAIL_E2E_PORT_BASE", KeepEnv: "DOVETAIL_E2E_KEEP",
		Stack: framework.Options{
			PortBase:       19800,
			NoController:   true,
			ControllerEnv:  controllerEnv,
			SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s", "--dra-drivers=gpu.nvidia.com,dra.net"},
		}}, &env))
}

// startController starts the controller with controllerEnv; once it runs, later calls leave it be.
func startController(t *testing.T) {
	t.Helper()
	if err := env.StartController(context.Background()); err != nil {
		t.Fatalf("starting the controller: %v", err)
	}
}
