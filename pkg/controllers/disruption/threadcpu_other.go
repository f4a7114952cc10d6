//go:build !linux

package disruption

import "time"

// threadCPU reports nothing where a thread's CPU clock is not read: the decision CPU histogram then stays empty.
func threadCPU() (time.Duration, bool) { return 0, false }
