//go:build linux

package threadcpu

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now is the CPU time the calling OS thread has used so far. A caller measuring a stretch of work locks its
// goroutine to the thread first (runtime.LockOSThread).
func Now() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
