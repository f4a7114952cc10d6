// Package threadcpu measures the CPU time of work done on one OS thread: the time a computation itself used, which
// a busy machine does not stretch as it stretches the wall time.
package threadcpu

import (
	"runtime"
	"time"
)

// Run runs f on the calling goroutine, locked to its OS thread, and returns the CPU time the thread used while f
// ran, or -1 where a thread's CPU clock is not read (outside Linux). The time counts f's own work and the
// collector's assists charged to its allocations; work f hands to other goroutines is not counted.
func Run(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, ok := Now()
	f()
	after, ok2 := Now()
	if !ok || !ok2 {
		return -1
	}
	return after - before
}
