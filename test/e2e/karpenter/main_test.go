//go:build e2e

// Package karpenter runs Karpenter's own AWS controller (a release built from its Go module by
// hack/build-karpenter.sh) on the local stack, with Dovetail's controller stopped: the fixture for taking over a
// running Karpenter cluster and handing it back. It has a stack of its own, so it runs alone:
//
//	go test -tags e2e -count 1 -v ./test/e2e/karpenter/
package karpenter

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack the package's tests share; TestMain owns it.
var env *framework.Stack

// DOVETAIL_E2E_PORT_BASE moves the stack's block of ports; DOVETAIL_E2E_KEEP=1 leaves the stack running and its
// logs in place after the tests.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "e2e-karpenter", PortEnv: "DOVETAIL_E2E_PORT_BASE", KeepEnv: "DOVETAIL_E2E_KEEP",
		Stack: framework.Options{
			PortBase:       19600,
			NoController:   true,
			SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s"},
		}}, &env))
}
