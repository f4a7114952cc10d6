package operator

// minOutsideHeap is the least memory left out of the Go runtime's soft limit for what the process holds outside
// the runtime's accounting: the pages of the binary it maps (37–42 MiB of the controller's 46 MB of text,
// read-only data and function tables, /proc/<pid>/smaps_rollup Pss_File during 1,000-node scale-outs), with a
// little to spare.
const minOutsideHeap = 44 << 20

// SoftMemoryLimit returns the soft memory limit the Go runtime should keep to in a container whose memory limit
// is limit bytes (settings.Settings.MemoryLimit, from MEMORY_LIMIT), and whether there is one to set: none when
// limit is zero or less or GOMEMLIMIT is set (GOMEMLIMIT, read by the runtime itself, wins). The runtime's limit
// counts only the memory it manages, while the container's counts the whole process, so the soft limit is the
// container's less a tenth of it, at least minOutsideHeap, and never below half the container's: with GOMEMLIMIT
// equal to the container's limit a busy controller reaches the limit with its heap alone and is killed.
func SoftMemoryLimit(limit int64, getenv func(string) string) (int64, bool) {
	if limit <= 0 || getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	outside := max(limit/10, minOutsideHeap)
	return max(limit-outside, limit/2), true
}

// GCPercent is the garbage collector's target (GOGC) the controller runs with when GOGC is not set: the heap may
// grow to 1.5 times what the last collection kept instead of the runtime's twice. Almost all of the controller's
// heap is its informer caches, which grow with the cluster and live as long as the process, so the runtime's
// default doubles its memory for little CPU saved: at rest the controller allocates little and collects rarely.
const GCPercent = 50

// DefaultGCPercent returns the garbage collector's target to set, and whether to set it: none when GOGC is set
// (read by the runtime itself, it wins).
func DefaultGCPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return GCPercent, true
}
