package framework

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ControllerLogPath is the controller's log file; hack/stack-up.sh truncates it when it starts the controller.
func (s *Stack) ControllerLogPath() string {
	return filepath.Join(s.StateDir, "stack", "logs", "dovetail.log")
}

// KillController sends SIGKILL to the controller process (no graceful shutdown, as a node failure or an OOM
// kill would) and returns its pid.
func (s *Stack) KillController() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.StateDir, "stack", "pids", "dovetail.pid"))
	if err != nil {
		return 0, fmt.Errorf("reading the controller's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("controller pid %q: %w", b, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return pid, fmt.Errorf("killing controller %d: %w", pid, err)
	}
	// Poll until the process is gone (it is not our child, so it cannot be waited for).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return pid, nil
		}
	}
	return pid, fmt.Errorf("controller %d still alive 5 s after SIGKILL", pid)
}

// StartController starts the controller again (hack/stack-up.sh starts what is not running) and waits until it
// is ready; on a stack started with NoController it starts the controller for the first time.
func (s *Stack) StartController(ctx context.Context) error {
	return s.script(ctx, "stack-up.sh", "DOVETAIL_CONTROLLER=")
}

// StopController stops the controller as a rolling update would: SIGTERM, so it releases its leader lease and
// stops its controllers, then SIGKILL if it is still running after timeout. Stopping a stopped controller is not
// an error.
func (s *Stack) StopController(timeout time.Duration) error {
	b, err := os.ReadFile(filepath.Join(s.StateDir, "stack", "pids", "dovetail.pid"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the controller's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("controller pid %q: %w", b, err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return nil // already gone
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return nil
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return fmt.Errorf("controller %d still running %s after SIGTERM; killed", pid, timeout)
}

// Replica is a controller process the test started itself (beside, or instead of, the stack's own), for
// leader-election scenarios.
type Replica struct {
	Name       string
	HealthPort int
	LogPath    string
	cmd        *exec.Cmd
	done       chan struct{}
}

// StartReplica starts bin/dovetail as the stack starts its controller (same AWS endpoint, cluster and
// ControllerEnv), with its own metrics and health ports and extraEnv last (e.g. "DISABLE_LEADER_ELECTION=false"),
// and waits until it reports ready. Stop it with Kill.
func (s *Stack) StartReplica(ctx context.Context, name string, metricsPort, healthPort int, extraEnv ...string) (*Replica, error) {
	b, err := os.ReadFile(filepath.Join(s.StateDir, "stack", "env"))
	if err != nil {
		return nil, fmt.Errorf("reading the stack's environment: %w", err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			env = append(env, v)
		}
	}
	env = append(env,
		fmt.Sprintf("CLUSTER_ENDPOINT=https://127.0.0.1:%d", s.PortBase+43),
		fmt.Sprintf("METRICS_PORT=%d", metricsPort), fmt.Sprintf("HEALTH_PROBE_PORT=%d", healthPort),
		"MEMORY_LIMIT=192MiB")
	env = append(env, s.ControllerEnv...)
	env = append(env, extraEnv...)
	r := &Replica{Name: name, HealthPort: healthPort, LogPath: filepath.Join(s.StateDir, "stack", "logs", name+".log"),
		done: make(chan struct{})}
	logFile, err := os.Create(r.LogPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", r.LogPath, err)
	}
	r.cmd = exec.Command(filepath.Join(s.RepoRoot, "bin", "dovetail"))
	r.cmd.Env = env
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting replica %s: %w", name, err)
	}
	go func() {
		_ = r.cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	err = Poll(ctx, time.Minute, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		select {
		case <-r.done:
			return false, "", fmt.Errorf("replica %s exited", name)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, "", err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	if err != nil {
		r.Kill()
		return nil, fmt.Errorf("replica %s not ready: %w", name, err)
	}
	return r, nil
}

// Kill sends SIGKILL to the replica and waits until it is gone.
func (r *Replica) Kill() {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
	}
	<-r.done
}
