//go:build e2e

// Package twocluster runs two local clusters with the same CLUSTER_NAME, each with its own control plane and
// Dovetail controller, in one simulated AWS account (one simulator): the scenario where one
// cluster's controller must never touch the other's instances, launch templates or instance profiles. It is part
// of `make test-e2e` (and `make test`); `make test-twocluster` runs it alone.
package twocluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// a and b are the two clusters; a's stack runs the shared simulator.
var a, b *framework.Stack

// Callers, as the simulator's call log names them (AWS_SDK_UA_APP_ID of each controller and of teardown).
const (
	callerA         = "cluster-a"
	callerB         = "cluster-b"
	callerTeardownB = "teardown-b"
)

// portEnv moves both stacks: b uses the block 50 ports above a's. Unset, a's base is 200 above the e2e
// package's (DOVETAIL_E2E_PORT_BASE, default 17400), so one setting moves the whole e2e suite.
const (
	portEnv    = "DOVETAIL_TWOCLUSTER_PORT_BASE"
	e2ePortEnv = "DOVETAIL_E2E_PORT_BASE"
	// keepEnv, when set, keeps both stacks' logs (controller, simulator, control plane) after the run.
	keepEnv = "DOVETAIL_TWOCLUSTER_KEEP"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	base := 17600
	for _, env := range []struct {
		name   string
		offset int
	}{{e2ePortEnv, 200}, {portEnv, 0}} {
		v := os.Getenv(env.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 || n+env.offset > 65000 {
			fmt.Fprintf(os.Stderr, "twocluster: %s=%q: want a port number between 1024 and %d\n", env.name, v, 65000-env.offset)
			return 1
		}
		base = n + env.offset
	}
	controllerEnv := func(caller string) []string {
		return []string{"BATCH_IDLE_DURATION=500ms", "BATCH_MAX_DURATION=3s", "REGISTRATION_TIMEOUT=60s", "AWS_SDK_UA_APP_ID=" + caller}
	}
	var states []string
	for range 2 {
		d, err := os.MkdirTemp("", "dovetail-twocluster-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "twocluster: %v\n", err)
			return 1
		}
		states = append(states, d)
	}
	optsA := framework.Options{StateDir: states[0], PortBase: base, ClusterName: "dovetail", ControllerEnv: controllerEnv(callerA),
		SimulatorFlags: []string{"--pending-duration=500ms", "--shutting-down-duration=1s"}}
	optsB := framework.Options{StateDir: states[1], PortBase: base + 50, ClusterName: "dovetail", ControllerEnv: controllerEnv(callerB)}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	sa, sb, err := framework.UpPair(ctx, optsA, optsB)
	defer func() {
		if os.Getenv(keepEnv) != "" {
			keepLogs(sa, sb)
		}
		downCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, s := range []*framework.Stack{sb, sa} {
			if s == nil {
				continue
			}
			if err := s.Down(downCtx); err != nil {
				fmt.Fprintf(os.Stderr, "twocluster: stopping a stack: %v\n", err)
			}
		}
		for _, d := range states {
			_ = os.RemoveAll(d)
		}
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "twocluster: %v\n", err)
		for _, s := range []*framework.Stack{sa, sb} {
			if s != nil {
				fmt.Fprintln(os.Stderr, "--- dovetail log ---\n"+s.LogTail("dovetail", 30))
			}
		}
		if sa != nil {
			fmt.Fprintln(os.Stderr, "--- awssim log ---\n"+sa.LogTail("awssim", 30))
		}
		return 1
	}
	a, b = sa, sb
	fmt.Printf("twocluster: two stacks up in %.1fs (ports %d and %d, one simulator at %s)\n", time.Since(start).Seconds(), base, base+50, a.AWSEndpoint)
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "--- cluster a dovetail log (last 60 lines) ---\n"+a.LogTail("dovetail", 60))
		fmt.Fprintln(os.Stderr, "--- cluster b dovetail log (last 60 lines) ---\n"+b.LogTail("dovetail", 60))
		fmt.Fprintln(os.Stderr, "--- awssim log (last 40 lines) ---\n"+a.LogTail("awssim", 40))
	}
	return code
}

// keepLogs copies both stacks' logs (controller, simulator, control plane) to a new directory before the stacks
// are stopped (which removes their state), and prints its path.
func keepLogs(stacks ...*framework.Stack) {
	dir, err := os.MkdirTemp("", "dovetail-twocluster-logs-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "twocluster: keeping the logs: %v\n", err)
		return
	}
	for i, s := range stacks {
		if s == nil {
			continue
		}
		for _, part := range []string{"stack", "cluster"} {
			src := filepath.Join(s.StateDir, part, "logs")
			if _, err := os.Stat(src); err != nil {
				continue
			}
			if err := os.CopyFS(filepath.Join(dir, string(rune('a'+i)), part), os.DirFS(src)); err != nil {
				fmt.Fprintf(os.Stderr, "twocluster: keeping the logs of %s: %v\n", src, err)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "twocluster: %s set: logs of clusters a and b kept in %s\n", keepEnv, dir)
}
