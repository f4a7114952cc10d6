package provisioning

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// waitArmed waits until the batcher armed its idle timer once more.
func waitArmed(t *testing.T, armed <-chan struct{}) {
	t.Helper()
	select {
	case <-armed:
	case <-time.After(5 * time.Second):
		t.Fatal("batcher never armed its idle timer")
	}
}

func TestBatcherWindow(t *testing.T) {
	tests := []struct {
		name string
		// steps are clock advances; before each, triggerBefore[i] says whether to trigger again.
		steps         []time.Duration
		triggerBefore []bool
		// closesAfter is the index of the step after which the window must be closed.
		closesAfter int
	}{
		{name: "idle closes after 1s", steps: []time.Duration{500 * time.Millisecond, 500 * time.Millisecond},
			triggerBefore: []bool{false, false}, closesAfter: 1},
		{name: "new pod extends idle window", steps: []time.Duration{800 * time.Millisecond, 800 * time.Millisecond, 200 * time.Millisecond},
			triggerBefore: []bool{false, true, false}, closesAfter: 2},
		{name: "max closes a busy window", steps: repeat(900*time.Millisecond, 12), triggerBefore: repeatBool(true, 12), closesAfter: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			b := NewBatcher(clk, time.Second, 10*time.Second)
			armed := make(chan struct{}, 100)
			b.armed = func() { armed <- struct{}{} }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan bool, 1)
			b.Trigger()
			go func() { done <- b.Wait(ctx) }()
			waitArmed(t, armed)
			for i, d := range tt.steps {
				if tt.triggerBefore[i] {
					b.Trigger()
					waitArmed(t, armed)
				}
				clk.Step(d)
				select {
				case ok := <-done:
					if i != tt.closesAfter {
						t.Fatalf("window closed after step %d (%s elapsed), want after step %d", i, clk.Since(time.Unix(0, 0)), tt.closesAfter)
					}
					if !ok {
						t.Fatal("Wait returned false")
					}
					return
				case <-time.After(20 * time.Millisecond):
					if i == tt.closesAfter {
						t.Fatalf("window still open after step %d (%s elapsed)", i, clk.Since(time.Unix(0, 0)))
					}
				}
			}
			t.Fatal("window never closed")
		})
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	b := NewBatcher(clocktesting.NewFakeClock(time.Unix(0, 0)), time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Fatal("Wait returned true on a cancelled context")
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func repeatBool(v bool, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = v
	}
	return out
}
