package framework

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Karpenter's default ports on a stack: PortBase+94 (metrics) and PortBase+95 (health probes), beside Dovetail's
// +88/+89 and the replicas the chaos tests start on +90..+93.
const (
	karpenterMetricsOffset = 94
	karpenterHealthOffset  = 95
)

// BuildKarpenter builds (once, cached outside the clone by hack/build-karpenter.sh) Karpenter's AWS controller at
// version, e.g. "v1.15.0", or at the script's pinned v1.14 release when version is empty (and KARPENTER_VERSION
// is unset), and returns the binary's path. A cold build takes minutes.
func BuildKarpenter(ctx context.Context, version string) (string, error) {
	args := []string{filepath.Join(RepoRoot(), "hack", "build-karpenter.sh")}
	if version != "" {
		args = append(args, version)
	}
	cmd := exec.CommandContext(ctx, "bash", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/build-karpenter.sh %s: %w\n%s", version, err, stderr.String())
	}
	path := strings.TrimSpace(stdout.String())
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("hack/build-karpenter.sh %s printed %q: %w", version, path, err)
	}
	return path, nil
}

// KarpenterOptions say which Karpenter to start on a stack and how.
type KarpenterOptions struct {
	// Version is the release to run (built with BuildKarpenter); default $KARPENTER_VERSION, else the pinned v1.14
	// release of hack/build-karpenter.sh. Ignored when Binary is set.
	Version string
	// Binary is the path of a controller binary to run instead of building Version.
	Binary string
	// MetricsPort and HealthPort default to PortBase+94 and PortBase+95.
	MetricsPort, HealthPort int
	// Env are extra environment variables, last (they win over the defaults), e.g. "BATCH_IDLE_DURATION=500ms",
	// "INTERRUPTION_QUEUE=dovetail" or "DISABLE_LEADER_ELECTION=false" with "LEADER_ELECTION_NAMESPACE=kube-system".
	Env []string
	// Name names the log file (<state>/stack/logs/<Name>.log, read with Stack.LogTail(Name, n)); default "karpenter".
	Name string
}

// Karpenter is a Karpenter controller process a test started on a stack.
type Karpenter struct {
	Name        string
	Version     string
	Binary      string
	MetricsPort int
	HealthPort  int
	LogPath     string
	cmd         *exec.Cmd
	done        chan struct{}
}

// KarpenterEnv is the environment Karpenter runs with on a stack: the stack's kubeconfig, simulator endpoint and
// credentials (those Dovetail's controller gets), the cluster's name and endpoint, the ports, and leader election
// off (one process). It does not name an interruption queue; add INTERRUPTION_QUEUE=<cluster name> to use the
// simulator's queue.
func (s *Stack) KarpenterEnv(metricsPort, healthPort int) ([]string, error) {
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
	return append(env,
		fmt.Sprintf("CLUSTER_ENDPOINT=https://127.0.0.1:%d", s.PortBase+43),
		fmt.Sprintf("METRICS_PORT=%d", metricsPort), fmt.Sprintf("HEALTH_PROBE_PORT=%d", healthPort),
		"DISABLE_LEADER_ELECTION=true",
		// Debug logs say what Karpenter discovered (cluster endpoint, CIDR, version) when a test fails; the simulator
		// answers within milliseconds, so Karpenter's default 10 s batch window would only slow the tests down.
		"LOG_LEVEL=debug",
		"BATCH_IDLE_DURATION=1s", "BATCH_MAX_DURATION=5s",
	), nil
}

// StartKarpenter starts Karpenter's AWS controller against the stack (its API server and AWS simulator) and waits
// until it reports ready. Dovetail's controller should be stopped first (StopController), or both act on the same
// NodePools. Stop it with Karpenter.Stop; its log stays in the stack's log folder.
func (s *Stack) StartKarpenter(ctx context.Context, opts KarpenterOptions) (*Karpenter, error) {
	if opts.Name == "" {
		opts.Name = "karpenter"
	}
	if opts.MetricsPort == 0 {
		opts.MetricsPort = s.PortBase + karpenterMetricsOffset
	}
	if opts.HealthPort == 0 {
		opts.HealthPort = s.PortBase + karpenterHealthOffset
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BuildKarpenter(ctx, opts.Version); err != nil {
			return nil, err
		}
		// The cache keeps each release in a folder named after it.
		opts.Version = filepath.Base(filepath.Dir(bin))
	}
	env, err := s.KarpenterEnv(opts.MetricsPort, opts.HealthPort)
	if err != nil {
		return nil, err
	}
	env = append(env, opts.Env...)
	k := &Karpenter{Name: opts.Name, Version: opts.Version, Binary: bin, MetricsPort: opts.MetricsPort,
		HealthPort: opts.HealthPort, LogPath: filepath.Join(s.StateDir, "stack", "logs", opts.Name+".log"),
		done: make(chan struct{})}
	logFile, err := os.OpenFile(k.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", k.LogPath, err)
	}
	k.cmd = exec.Command(bin)
	k.cmd.Env = env
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := k.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	// The pid file lets hack/stack-down.sh stop a Karpenter a failed test left behind.
	pidPath := filepath.Join(s.StateDir, "stack", "pids", opts.Name+".pid")
	_ = os.WriteFile(pidPath, fmt.Appendf(nil, "%d\n", k.cmd.Process.Pid), 0o644)
	go func() {
		_ = k.cmd.Wait()
		logFile.Close()
		_ = os.Remove(pidPath)
		close(k.done)
	}()
	if err := k.waitReady(ctx); err != nil {
		k.Kill()
		return nil, fmt.Errorf("karpenter %s not ready: %w\n%s", opts.Version, err, s.LogTail(opts.Name, 30))
	}
	return k, nil
}

func (k *Karpenter) waitReady(ctx context.Context) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", k.HealthPort)
	return Poll(ctx, 2*time.Minute, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		select {
		case <-k.done:
			return false, "", fmt.Errorf("karpenter exited: %s", k.cmd.ProcessState)
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
}

// Exited reports whether the process has ended.
func (k *Karpenter) Exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM (Karpenter releases its lease and stops its controllers) and waits up to timeout for the
// process to end, then kills it. It returns an error when the process had to be killed.
func (k *Karpenter) Stop(timeout time.Duration) error {
	if k.Exited() {
		return nil
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
		return nil
	case <-time.After(timeout):
		k.Kill()
		return fmt.Errorf("karpenter did not stop within %s of SIGTERM; killed", timeout)
	}
}

// Kill sends SIGKILL and waits until the process is gone.
func (k *Karpenter) Kill() {
	if k.cmd.Process != nil {
		_ = k.cmd.Process.Kill()
	}
	<-k.done
}
