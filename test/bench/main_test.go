//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// defaultPortBase is the block of loopback ports of the benchmark stack, apart from the e2e tests' (17400) and
// the demo's (16400), so all three can run at once. DOVETAIL_BENCH_PORT_BASE overrides it.
const defaultPortBase = 18400

func portBase() (int, error) {
	v := os.Getenv("DOVETAIL_BENCH_PORT_BASE")
	if v == "" {
		return defaultPortBase, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1024 || n > 65000 {
		return 0, fmt.Errorf("DOVETAIL_BENCH_PORT_BASE must be a port number between 1024 and 65000, got %q", v)
	}
	return n, nil
}

// env is the stack the benchmarks share; TestMain owns it. Each benchmark uses its own NodePool and namespace and
// removes them before it returns, so the next one starts from an empty cluster.
var env *framework.Stack

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ports, err := portBase()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	state, err := os.MkdirTemp("", "dovetail-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	// The controller runs with its default settings (BATCH_IDLE_DURATION=1s, BATCH_MAX_DURATION=10s) and the
	// simulator with its default timings (2 s pending, 2 s shutting-down, 1 s until the uninitialized taint
	// goes), so the figures are those a user of the local stack sees.
	env, err = framework.Up(ctx, framework.Options{StateDir: state, PortBase: ports})
	defer func() {
		downCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if os.Getenv("DOVETAIL_BENCH_KEEP") != "" {
			fmt.Printf("bench: DOVETAIL_BENCH_KEEP set: stack left running (state %s)\n", state)
			return
		}
		if err := env.Down(downCtx); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stopping the stack:", err)
		}
		_ = os.RemoveAll(state)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: starting the stack:", err)
		fmt.Fprintln(os.Stderr, "--- dovetail log ---\n"+env.LogTail("dovetail", 40))
		fmt.Fprintln(os.Stderr, "--- awssim log ---\n"+env.LogTail("awssim", 40))
		return 1
	}
	fmt.Printf("bench: stack up in %.1fs (state %s)\n", time.Since(start).Seconds(), state)
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "--- dovetail log (last 80 lines) ---\n"+env.LogTail("dovetail", 80))
		fmt.Fprintln(os.Stderr, "--- awssim log (last 40 lines) ---\n"+env.LogTail("awssim", 40))
	}
	return code
}
