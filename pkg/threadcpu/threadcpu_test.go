package threadcpu

import (
	"runtime"
	"testing"
	"time"
)

// spin does busy work until the process's wall clock shows d of it.
func spin(d time.Duration) uint64 {
	x := uint64(1)
	for began := time.Now(); time.Since(began) < d; {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// TestNow: the thread's clock advances by the work done on it, and not by time spent waiting.
func TestNow(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := Now()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("Now: no thread CPU clock on Linux")
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	if spin(50*time.Millisecond) == 0 {
		t.Log("keeps the loop")
	}
	busy, _ := Now()
	if got := busy - start; got <= 0 || got > 10*time.Second {
		t.Fatalf("CPU of 50 ms of busy work on the thread = %v, want more than 0", got)
	}
	<-time.After(50 * time.Millisecond) // a wait: the thread is parked, its clock stands still
	waited, _ := Now()
	if got := waited - busy; got > 40*time.Millisecond {
		t.Fatalf("CPU while waiting 50 ms = %v, want well under the wait", got)
	}
}

// TestRun: Run reports the work of the function it runs, not its waits, and -1 only where no clock is read.
func TestRun(t *testing.T) {
	if _, ok := Now(); !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("Now: no thread CPU clock on Linux")
		}
		if got := Run(func() {}); got != -1 {
			t.Fatalf("Run without a thread clock = %v, want -1", got)
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	var x uint64
	if got := Run(func() { x = spin(50 * time.Millisecond) }); got <= 0 || got > 10*time.Second {
		t.Fatalf("Run of 50 ms of busy work = %v, want more than 0", got)
	}
	if x == 0 {
		t.Log("keeps the loop")
	}
	if got := Run(func() { <-time.After(50 * time.Millisecond) }); got < 0 || got > 40*time.Millisecond {
		t.Fatalf("Run of a 50 ms wait = %v, want well under the wait", got)
	}
}
