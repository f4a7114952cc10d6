package framework

import (
	"context"
	"fmt"
	"os"
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
// is ready.
func (s *Stack) StartController(ctx context.Context) error {
	return s.script(ctx, "stack-up.sh")
}
