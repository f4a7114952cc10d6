package deps

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestPeriodic: a pass at once, one more each time the clock passes the interval (a failure does not stop the
// loop), none once the context ends, and the runnable returns nil then.
func TestPeriodic(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC))
	var passes atomic.Int32
	passed := make(chan struct{}, 10)
	r := Periodic("test", clk, time.Minute, "pass failed", func(context.Context) error {
		passes.Add(1)
		passed <- struct{}{}
		return errors.New("always fails")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()

	wait := func(want int32) {
		t.Helper()
		select {
		case <-passed:
		case <-time.After(10 * time.Second):
			t.Fatalf("pass %d did not run", want)
		}
		if got := passes.Load(); got != want {
			t.Fatalf("passes = %d, want %d", got, want)
		}
	}
	wait(1)
	for i := int32(2); i <= 3; i++ {
		// Step only once the loop waits on the clock, else the step is lost.
		deadline := time.Now().Add(10 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the loop never waited on the clock")
			}
			time.Sleep(time.Millisecond)
		}
		clk.Step(30 * time.Second)
		select {
		case <-passed:
			t.Fatal("a pass ran before the interval passed")
		default:
		}
		clk.Step(30 * time.Second)
		wait(i)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after the context ended")
	}
}
