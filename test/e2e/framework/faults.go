package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SimState is the part of the simulator's state dump (GET /_awssim/state) the fault scenarios read.
type SimState struct {
	// Calls counts API calls by action, throttled ones included.
	Calls map[string]int `json:"calls"`
	// ServiceCalls counts them by service family ("ec2", "iam", "sqs", ...).
	ServiceCalls map[string]int `json:"serviceCalls"`
	// CapacityRefusals counts, by pool "type/zone/capacity-type", launch requests an injected capacity fault refused.
	CapacityRefusals map[string]int `json:"capacityRefusals"`
	// InstancesByNodeClaim counts the instances that ever carried each NodeClaim's tag, terminated ones included.
	InstancesByNodeClaim map[string]int `json:"instancesByNodeClaim"`
}

// SimulatorState reads the simulator's call counters.
func (s *Stack) SimulatorState(ctx context.Context) (SimState, error) {
	var st SimState
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.AWSEndpoint+"/_awssim/state", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("reading simulator state: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("decoding simulator state: %w", err)
	}
	return st, nil
}

// SimAdmin calls the simulator's admin API (docs/simulator.md) with a JSON body (nil for none).
func (s *Stack) SimAdmin(ctx context.Context, method, path string, body any) error {
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.AWSEndpoint+"/_awssim/"+path, in)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("awssim %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("awssim %s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(out)))
	}
	return nil
}

// ControllerPID reads the running controller's process id from the stack's pid file.
func (s *Stack) ControllerPID() (int, error) {
	return readPID(filepath.Join(s.StateDir, "stack", "pids", "dovetail.pid"))
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %q: %w", path, b, err)
	}
	return pid, nil
}

// ProcessCPU is the CPU time (user + system) a process has used so far, read from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading cpu time of %d: %w", pid, err)
	}
	// Fields after the command name (which may hold spaces) in parentheses; utime and stime are fields 14 and 15.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	// USER_HZ is 100 on every Linux the stack runs on.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// StopAPIServer stops the kube-apiserver (SIGTERM, then SIGKILL after 10 s), leaving etcd and everything else
// running, and returns its command line for StartAPIServer.
func (s *Stack) StopAPIServer(ctx context.Context) ([]string, error) {
	pidFile := filepath.Join(s.StateDir, "cluster", "pids", "kube-apiserver.pid")
	pid, err := readPID(pidFile)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver %d command line: %w", pid, err)
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if len(args) == 0 || !strings.HasSuffix(args[0], "kube-apiserver") {
		return nil, fmt.Errorf("pid %d is %q, not the kube-apiserver", pid, args)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("stopping kube-apiserver %d: %w", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if syscall.Kill(pid, 0) != nil {
			return args, nil
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return args, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StartAPIServer starts the kube-apiserver again with the command line StopAPIServer returned (same etcd, so
// every object is still there), records its pid where hack/stack-down.sh finds it, and waits until /readyz
// answers through the stack's client.
func (s *Stack) StartAPIServer(ctx context.Context, args []string) error {
	logf, err := os.OpenFile(filepath.Join(s.StateDir, "cluster", "logs", "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it if it exits while the test runs; hack/stack-down.sh stops it
	pidFile := filepath.Join(s.StateDir, "cluster", "pids", "kube-apiserver.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	return Poll(ctx, 2*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		body, err := s.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, "kube-apiserver not ready: " + err.Error(), nil
		}
		return strings.TrimSpace(string(body)) == "ok", string(body), nil
	})
}
