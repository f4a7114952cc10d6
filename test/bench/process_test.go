//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memory is a process's resident set in bytes: the current value and the peak (high-water mark).
type memory struct {
	RSS, HWM int64
	// Anon and File split RSS: anonymous pages (the Go heap, stacks, the runtime's own structures) and the pages
	// of mapped files (mostly the binary's text and read-only data).
	Anon, File int64
}

// controllerPID returns the pid of the running dovetail process, from the stack's pid file.
func controllerPID() (int, error) {
	path := filepath.Join(env.StateDir, "stack", "pids", "dovetail.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading the controller's pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	// hack/stack-up.sh starts `setsid env ... bin/dovetail`; both exec, so the pid is the controller's own.
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return 0, fmt.Errorf("controller pid %d: %w", pid, err)
	}
	if c := strings.TrimSpace(string(comm)); c != "dovetail" {
		return 0, fmt.Errorf("pid %d from %s is %q, not dovetail", pid, path, c)
	}
	return pid, nil
}

// readMemory reads VmRSS, VmHWM, RssAnon and RssFile of a process from /proc/<pid>/status.
func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var field *int64
		switch key {
		case "VmRSS":
			field = &m.RSS
		case "VmHWM":
			field = &m.HWM
		case "RssAnon":
			field = &m.Anon
		case "RssFile":
			field = &m.File
		default:
			continue
		}
		fields := strings.Fields(value) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return memory{}, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, key, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, key, err)
		}
		*field = kb * 1024
	}
	if err := sc.Err(); err != nil {
		return memory{}, err
	}
	if m.RSS == 0 || m.HWM == 0 {
		return memory{}, fmt.Errorf("/proc/%d/status has no VmRSS/VmHWM", pid)
	}
	return m, nil
}

// resetPeak resets the process's VmHWM to its current RSS (writing 5 to /proc/<pid>/clear_refs), so the peak a
// benchmark reports is its own rather than an earlier one's. It reports whether that worked.
func resetPeak(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// memorySampler samples a process's RSS until stopped and keeps the largest value, as a cross-check of VmHWM
// (which only resets when resetPeak works).
type memorySampler struct {
	pid  int
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	peakRSS int64
	err     error
}

func sampleMemory(ctx context.Context, pid int, every time.Duration) *memorySampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &memorySampler{pid: pid, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			m, err := readMemory(pid)
			s.mu.Lock()
			if err != nil {
				s.err = err
			} else if m.RSS > s.peakRSS {
				s.peakRSS = m.RSS
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the largest RSS seen.
func (s *memorySampler) Stop() (int64, error) {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakRSS, s.err
}

// machine describes where a benchmark ran.
type machine struct {
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memoryBytes"`
	Kernel      string `json:"kernel,omitempty"`
	// LoadAverage is the 1-minute load average when the result was written: other work on the machine slows the
	// control plane (kube-scheduler, kwok) the figures include.
	LoadAverage string `json:"loadAverage1m,omitempty"`
}

func describeMachine() machine {
	m := machine{CPUs: nproc()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) == 2 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemoryBytes = kb * 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAverage = f[0]
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// stackCPU returns the CPU seconds used so far by each process of the stack whose pid file is in the state
// folder (cluster/pids: kube-apiserver, etcd, kwok, ...; stack/pids: dovetail, awssim), by name. A process that
// cannot be read is left out.
func stackCPU() map[string]float64 {
	out := map[string]float64{}
	for _, dir := range []string{"cluster", "stack"} {
		files, _ := filepath.Glob(filepath.Join(env.StateDir, dir, "pids", "*.pid"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				continue
			}
			if s, err := controllerCPUSeconds(pid); err == nil {
				out[strings.TrimSuffix(filepath.Base(f), ".pid")] = s
			}
		}
	}
	return out
}

// machineBusySeconds returns the CPU seconds all processors spent not idle since boot (/proc/stat).
func machineBusySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy float64
	for i, f := range fields[1:] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", f, err)
		}
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user time
			continue
		}
		busy += v
	}
	return busy / 100, nil
}
