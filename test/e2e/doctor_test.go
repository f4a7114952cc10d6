//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dovetail/dovetail/pkg/cli/doctor"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDoctor (issue 14): `dovetailctl doctor` against the local stack passes every check; with a setup fault
// injected in the simulator, the check it breaks fails with its fix and doctor exits 1.
func TestDoctor(t *testing.T) {
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Fatalf("%s: %v (run make build first)", ctl, err)
	}
	const pool = "doctor"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}})
	t.Cleanup(func() {
		if err := simAdmin(context.Background(), http.MethodPost, "faults/setup", map[string]any{}); err != nil {
			t.Errorf("clearing setup faults: %v", err)
		}
	})

	report, code := runDoctor(t, ctl)
	if code != 0 || report.Fail > 0 {
		t.Errorf("healthy stack: exit %d, %d failures:\n%s", code, report.Fail, text(report))
	}
	// Warnings are about the workloads (DaemonSets) other tests of the shared stack may leave running; the setup
	// checks below must pass outright.
	if report.Warn > 0 {
		t.Logf("healthy stack: %d warnings:\n%s", report.Warn, text(report))
	}
	for _, check := range []string{"identity", "iam-permissions", "nodeclass-subnets/" + pool, "nodeclass-security-groups/" + pool,
		"nodeclass-amis/" + pool, "nodeclass-instance-profile/" + pool, "interruption-queue", "interruption-queue-policy",
		"interruption-rules", "cluster-uid", "leftovers", "uninitialized-nodes", "nodepools-launchable/" + pool} {
		if got := report.Get(check); len(got) != 1 || got[0].Status != doctor.Pass {
			t.Errorf("healthy stack: check %s: %+v", check, got)
		}
	}

	faults := []struct {
		name    string
		fault   map[string]any
		check   string
		wantFix string
	}{
		{"denied action", map[string]any{"deniedActions": []string{"ec2:CreateFleet"}}, "iam-permissions", "ec2:CreateFleet"},
		{"queue policy", map[string]any{"queuePolicyMissing": true}, "interruption-queue-policy", "events.amazonaws.com"},
		{"missing rule", map[string]any{"missingEventRules": []string{"Rebalance"}}, "interruption-rules", "Rebalance"},
		{"expired credentials", map[string]any{"identityError": "ExpiredToken"}, "identity", "credentials"},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			if err := simAdmin(context.Background(), http.MethodPost, "faults/setup", f.fault); err != nil {
				t.Fatal(err)
			}
			report, code := runDoctor(t, ctl)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			got := report.Get(f.check)
			if len(got) != 1 || got[0].Status != doctor.Fail || !strings.Contains(got[0].Fix, f.wantFix) {
				t.Errorf("check %s: %+v, want a failure whose fix names %q\n%s", f.check, got, f.wantFix, text(report))
			}
		})
	}
}

// runDoctor runs `dovetailctl doctor -o json` against the stack and returns its report and exit code.
func runDoctor(t *testing.T, ctl string) (*doctor.Report, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctl, "doctor", "-o", "json", "--kubeconfig", env.Kubeconfig, "--cluster-name", "dovetail",
		"--interruption-queue", "dovetail")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+env.AWSEndpoint, "AWS_REGION=us-west-2", "AWS_ACCESS_KEY_ID=123456789012",
		"AWS_SECRET_ACCESS_KEY=local-simulator", "AWS_EC2_METADATA_DISABLED=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("dovetailctl doctor: %v\n%s", err, stderr.String())
		}
		code = exit.ExitCode()
	}
	var r doctor.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("dovetailctl doctor -o json printed no report (exit %d): %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	return &r, code
}

func text(r *doctor.Report) string {
	var b bytes.Buffer
	_ = r.WriteText(&b)
	return b.String()
}
