package operator

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logLines runs use on a JSON zap logger (deferred or not) and returns its lines without their timestamps.
func logLines(t *testing.T, deferred bool, use func(logr.Logger)) []string {
	t.Helper()
	var buf bytes.Buffer
	l := zap.New(zap.WriteTo(&buf), zap.Level(zapLevel("debug")))
	if deferred {
		l = DeferValues(l)
	}
	use(l)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		// {"level":"info","ts":1.7e9,"logger":...}: drop the ts field.
		if i := strings.Index(line, `"ts":`); i >= 0 {
			j := strings.IndexByte(line[i:], ',')
			line = line[:i] + line[i+j+1:]
		}
		out = append(out, line)
	}
	return out
}

// A deferred logger writes the lines the logger it wraps writes: names, values in order, levels, errors, and
// values added to a logger after another was derived from it.
func TestDeferValuesWritesTheSameLines(t *testing.T) {
	use := func(l logr.Logger) {
		base := l.WithName("controller").WithValues("controller", "nodeclaim.lifecycle", "kind", "NodeClaim")
		req := base.WithValues("name", "default-abcde", "reconcileID", "1234")
		req.Info("launched", "instance", "i-0abc")
		req.V(1).Info("details", "n", 3)
		req.V(5).Info("not written at debug")
		base.WithName("sub").Error(errors.New("boom"), "failed", "attempt", 2)
		base.Info("the base keeps its own values")
		l.Info("the root has none")
		req.Info("twice, with the values applied once")
	}
	var lines [2][]string // direct, deferred: written from one call site, for the error's stack trace
	for i, deferred := range []bool{false, true} {
		lines[i] = logLines(t, deferred, use)
	}
	want, got := lines[0], lines[1]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deferred logger's lines (-direct +deferred):\n%s", diff)
	}
	if len(want) != 6 {
		t.Fatalf("the direct logger wrote %d lines, want 6:\n%s", len(want), strings.Join(want, "\n"))
	}
}

// countingSink counts the WithValues calls that reach it.
type countingSink struct {
	mu         sync.Mutex
	withValues int
	lines      int
}

func (*countingSink) Init(logr.RuntimeInfo) {}
func (*countingSink) Enabled(int) bool      { return true }
func (s *countingSink) Info(int, string, ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines++
}
func (s *countingSink) Error(error, string, ...any) { s.Info(0, "") }
func (s *countingSink) WithValues(...any) logr.LogSink {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withValues++
	return s
}
func (s *countingSink) WithName(string) logr.LogSink { return s }

// Values reach the sink only when a line is written, once for a logger however many lines it writes, and a
// logger used from many goroutines applies them once.
func TestDeferValuesAppliesOnlyWhenWriting(t *testing.T) {
	sink := &countingSink{}
	l := DeferValues(logr.New(sink))
	for i := range 1000 {
		_ = l.WithValues("controller", "x").WithValues("name", i)
	}
	if sink.withValues != 0 {
		t.Fatalf("%d WithValues reached the sink before any line", sink.withValues)
	}
	req := l.WithValues("controller", "x").WithValues("name", "a")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { req.Info("line") })
	}
	wg.Wait()
	if sink.withValues != 2 || sink.lines != 8 {
		t.Fatalf("WithValues reached the sink %d times for 8 lines (%d written), want 2", sink.withValues, sink.lines)
	}
	if DeferValues(l).GetSink() != l.GetSink() {
		t.Error("DeferValues wrapped a deferred logger again")
	}
}

// BenchmarkReconcileLogger derives the logger controller-runtime gives a reconcile (controller, object, reconcile
// ID) from a JSON zap logger, directly and deferred; the reconcile writes no line.
func BenchmarkReconcileLogger(b *testing.B) {
	for _, deferred := range []bool{false, true} {
		b.Run(map[bool]string{false: "direct", true: "deferred"}[deferred], func(b *testing.B) {
			var buf bytes.Buffer
			l := zap.New(zap.WriteTo(&buf))
			if deferred {
				l = DeferValues(l)
			}
			base := l.WithValues("controller", "nodeclaim.lifecycle", "controllerGroup", "karpenter.sh", "controllerKind", "NodeClaim")
			b.ReportAllocs()
			for b.Loop() {
				r := base.WithValues("NodeClaim", map[string]string{"name": "default-abcde"}, "namespace", "", "name", "default-abcde")
				r = r.WithValues("reconcileID", "8c2f0b6e-0a7e-4f57-9a0e-1d6f0c1e2b3a")
				_ = r.V(1).Enabled()
			}
		})
	}
}
