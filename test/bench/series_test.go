//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// seriesEvery is how often the series sampler reads the controller's CPU time and RSS.
const seriesEvery = 10 * time.Second

// seriesHeader is the first line of series.csv; hack/scaleplot reads this layout.
const seriesHeader = "seconds,phase,controllerCPUSeconds,controllerRSSMiB"

// series writes, every seriesEvery, the controller's CPU seconds so far and its RSS with the phase running, one
// CSV line each, flushed as it goes (a run stopped half way keeps what it measured). Plot it with
// `go run ./hack/scaleplot -in series.csv -svg out.svg`.
type series struct {
	// pid reads the controller's pid at each sample: a restart makes another process.
	pid func() (int, error)
	// lastPID and lastCPU are the process sampled last and its CPU seconds then; offset is the CPU seconds of
	// the processes before it, so the column counts the controller's CPU over the run across restarts.
	lastPID         int
	lastCPU, offset float64
	start           time.Time
	f               *os.File
	w               *bufio.Writer

	mu    sync.Mutex
	phase string

	stop context.CancelFunc
	done chan struct{}
}

// startSeries starts sampling the controller, whose pid pid reads, into path.
func startSeries(pid func() (int, error), path string) (*series, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &series{pid: pid, start: time.Now(), f: f, w: bufio.NewWriter(f), phase: "setup", stop: cancel, done: make(chan struct{})}
	if _, err := fmt.Fprintln(s.w, seriesHeader); err != nil {
		cancel()
		_ = f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	go s.run(ctx)
	return s, nil
}

func (s *series) run(ctx context.Context) {
	defer close(s.done)
	ticker := time.NewTicker(seriesEvery)
	defer ticker.Stop()
	for {
		s.sample()
		select {
		case <-ctx.Done():
			s.sample()
			return
		case <-ticker.C:
		}
	}
}

func (s *series) sample() {
	pid, err := s.pid()
	if err != nil {
		return // between a stop and a start
	}
	cpu, err := controllerCPUSeconds(pid)
	if err != nil {
		return
	}
	m, err := readMemory(pid)
	if err != nil {
		return
	}
	if pid != s.lastPID {
		if s.lastPID != 0 {
			s.offset += s.lastCPU
		}
		s.lastPID = pid
	}
	s.lastCPU = cpu
	cpu += s.offset
	s.mu.Lock()
	phase := s.phase
	s.mu.Unlock()
	fmt.Fprintf(s.w, "%.1f,%s,%.2f,%.1f\n", time.Since(s.start).Seconds(), phase, cpu, float64(m.RSS)/(1<<20))
	_ = s.w.Flush()
}

// setPhase names the phase the next samples belong to.
func (s *series) setPhase(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase = p
}

// Stop takes a last sample and closes the file.
func (s *series) Stop() error {
	s.stop()
	<-s.done
	if err := s.w.Flush(); err != nil {
		_ = s.f.Close()
		return err
	}
	return s.f.Close()
}
