package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MainOptions configure Main.
type MainOptions struct {
	// Name prefixes Main's messages and the stack's temporary state directory ("e2e", "bench").
	Name string
	// PortEnv names the environment variable that overrides Stack.PortBase (a port between 1024 and 65000).
	PortEnv string
	// KeepEnv, when set and that environment variable is not empty, leaves the stack running after the tests.
	KeepEnv string
	// Stack is how to start the stack; Main fills in StateDir, and PortBase when PortEnv is set.
	Stack Options
}

// Main is the body of a TestMain that shares one local stack between a package's tests: it starts the stack,
// stores it in *stack, runs the tests, prints the controller's and simulator's last log lines when something
// failed, stops the stack and removes its state. It returns the exit code for os.Exit.
func Main(m *testing.M, opts MainOptions, stack **Stack) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", opts.Name, err)
		return 1
	}
	if v := os.Getenv(opts.PortEnv); opts.PortEnv != "" && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 || n > 65000 {
			return fail(fmt.Errorf("%s=%q: want a port number between 1024 and 65000", opts.PortEnv, v))
		}
		opts.Stack.PortBase = n
	}
	if v := os.Getenv(IAMPolicyEnv); v != "" {
		flags, err := iamPolicyFlags(v, opts.Stack.ClusterName)
		if err != nil {
			return fail(err)
		}
		opts.Stack.SimulatorFlags = append(opts.Stack.SimulatorFlags, flags...)
		fmt.Printf("%s: %s set: the simulator enforces %s\n", opts.Name, IAMPolicyEnv, flags[0])
	}
	state, err := os.MkdirTemp("", "dovetail-"+opts.Name+"-")
	if err != nil {
		return fail(err)
	}
	opts.Stack.StateDir = state
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	env, err := Up(ctx, opts.Stack)
	defer func() {
		if opts.KeepEnv != "" && os.Getenv(opts.KeepEnv) != "" {
			fmt.Printf("%s: %s set: stack left running (state %s)\n", opts.Name, opts.KeepEnv, state)
			return
		}
		downCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env.Down(downCtx); err != nil {
			fmt.Fprintf(os.Stderr, "%s: stopping the stack: %v\n", opts.Name, err)
		}
		_ = os.RemoveAll(state)
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: starting the stack: %v\n", opts.Name, err)
		fmt.Fprintln(os.Stderr, "--- dovetail log ---\n"+env.LogTail("dovetail", 40))
		fmt.Fprintln(os.Stderr, "--- awssim log ---\n"+env.LogTail("awssim", 40))
		return 1
	}
	*stack = env
	fmt.Printf("%s: stack up in %.1fs (state %s)\n", opts.Name, time.Since(start).Seconds(), state)
	code := m.Run()
	if os.Getenv(IAMPolicyEnv) != "" {
		reportDenials(opts.Name, env.LogTail("awssim", 1<<24))
	}
	if code != 0 {
		if !opts.Stack.NoController {
			fmt.Fprintln(os.Stderr, "--- dovetail log (last 80 lines) ---\n"+env.LogTail("dovetail", 80))
		}
		fmt.Fprintln(os.Stderr, "--- awssim log (last 40 lines) ---\n"+env.LogTail("awssim", 40))
	}
	return code
}

// IAMPolicyEnv makes the simulator enforce an IAM policy on the controller's calls: "documented" (or "1") for
// docs/iam/controller-policy.json, or the path of a policy template.
const IAMPolicyEnv = "DOVETAIL_E2E_IAM_POLICY"

// iamPolicyFlags are the `awssim serve` flags enforcing the policy v names. CLUSTER_UID comes from the stack's
// kube-system namespace (awssim reads it); the node role is the one the test EC2NodeClasses name.
func iamPolicyFlags(v, clusterName string) ([]string, error) {
	path := v
	if v == "documented" || v == "1" {
		path = filepath.Join(RepoRoot(), "docs", "iam", "controller-policy.json")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s=%q: %w", IAMPolicyEnv, v, err)
	}
	if strings.ContainsAny(path, " \t") {
		return nil, fmt.Errorf("%s=%q: the policy path must not contain spaces (AWSSIM_FLAGS is split on them)", IAMPolicyEnv, v)
	}
	if clusterName == "" {
		clusterName = "dovetail"
	}
	return []string{"--iam-policy=" + path, "--iam-policy-var=NODE_ROLE_NAME=KarpenterNodeRole-" + clusterName}, nil
}

// reportDenials prints how many calls the simulator's policy denied, and the first few, so a run under
// DOVETAIL_E2E_IAM_POLICY shows whether the controller needed a permission the policy lacks (a denial the
// controller retried past would not fail a test).
func reportDenials(name, awssimLog string) {
	var denied []string
	for _, line := range strings.Split(awssimLog, "\n") {
		if strings.Contains(line, "IAM policy denied a call") {
			denied = append(denied, line)
		}
	}
	fmt.Printf("%s: the IAM policy denied %d calls\n", name, len(denied))
	for _, line := range denied[:min(len(denied), 20)] {
		fmt.Printf("%s:   %s\n", name, line)
	}
}
