//go:build bench

package bench

import (
	"os"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// env is the stack the benchmarks share; TestMain owns it. Each benchmark uses its own NodePool and namespace and
// removes them before it returns, so the next one starts from an empty cluster.
var env *framework.Stack

// The stack's ports (18400 on, apart from the e2e tests' 17400 and the demo's 16400, so all three can run at once)
// can be moved with DOVETAIL_BENCH_PORT_BASE; DOVETAIL_BENCH_KEEP leaves the stack running afterwards. The
// controller runs with its default settings (BATCH_IDLE_DURATION=1s, BATCH_MAX_DURATION=10s) and the simulator with
// its default timings (2 s pending, 2 s shutting-down, 1 s until the uninitialized taint goes), so the figures are
// those a user of the local stack sees.
func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.MainOptions{Name: "bench", PortEnv: "DOVETAIL_BENCH_PORT_BASE",
		KeepEnv: "DOVETAIL_BENCH_KEEP", Stack: framework.Options{PortBase: 18400}}, &env))
}
