package operator

import (
	"fmt"
	"strconv"
	"strings"
)

// MemoryLimitEnv names the variable holding the container's memory limit in bytes (the Helm chart sets it from
// controller.resources.limits.memory through the downward API).
const MemoryLimitEnv = "MEMORY_LIMIT"

// minOutsideHeap is the least memory left out of the Go runtime's soft limit for what the process holds outside
// the runtime's accounting: the pages of the binary it maps (37–42 MiB of the controller's 46 MB of text,
// read-only data and function tables, /proc/<pid>/smaps_rollup Pss_File during 1,000-node scale-outs), with a
// little to spare.
const minOutsideHeap = 44 << 20

// SoftMemoryLimit returns the soft memory limit the Go runtime should keep to in a container whose memory limit
// is the value of MEMORY_LIMIT (bytes, as the downward API gives it, or a Go-style size such as 160MiB), and
// whether there is one to set: none when MEMORY_LIMIT is empty or GOMEMLIMIT is set (GOMEMLIMIT, read by the
// runtime itself, wins). The runtime's limit counts only the memory it manages, while the container's counts
// the whole process, so the soft limit is the container's less a tenth of it, at least minOutsideHeap, and never
// below half the container's: with GOMEMLIMIT equal to the container's limit a busy controller reaches the limit
// with its heap alone and is killed.
func SoftMemoryLimit(getenv func(string) string) (int64, bool, error) {
	raw := strings.TrimSpace(getenv(MemoryLimitEnv))
	if raw == "" || getenv("GOMEMLIMIT") != "" {
		return 0, false, nil
	}
	limit, err := parseBytes(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q: %w", MemoryLimitEnv, raw, err)
	}
	outside := max(limit/10, minOutsideHeap)
	return max(limit-outside, limit/2), true, nil
}

// parseBytes reads a byte count: a plain integer, or one with a B, KiB, MiB, GiB or TiB suffix as GOMEMLIMIT
// takes it.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	factor := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, factor = strings.TrimSuffix(s, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a positive number of bytes (e.g. 167772160 or 160MiB)")
	}
	if n > (1<<62)/factor {
		return 0, fmt.Errorf("too large")
	}
	return n * factor, nil
}
