package disruption

import (
	"runtime"
	"testing"
	"time"
)

// TestThreadCPU: the thread's clock advances by the work done on it, and not by time spent waiting.
func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("threadCPU: no thread CPU clock on Linux")
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	// Busy work until the process's wall clock shows 50 ms of it.
	x := uint64(1)
	for began := time.Now(); time.Since(began) < 50*time.Millisecond; {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	busy, _ := threadCPU()
	if x == 0 {
		t.Log(x) // keeps the loop
	}
	if got := busy - start; got <= 0 || got > 10*time.Second {
		t.Fatalf("CPU of 50 ms of busy work on the thread = %v, want more than 0", got)
	}
	<-time.After(50 * time.Millisecond) // a wait: the thread is parked, its clock stands still
	waited, _ := threadCPU()
	if got := waited - busy; got > 40*time.Millisecond {
		t.Fatalf("CPU while waiting 50 ms = %v, want well under the wait", got)
	}
}
