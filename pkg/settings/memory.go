package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// applyMemoryLimit reads MEMORY_LIMIT: a byte count as the downward API gives it (Karpenter's form; zero or less
// means no limit, Karpenter's default is -1), or a positive size with a B, KiB, MiB, GiB or TiB suffix as
// GOMEMLIMIT takes it.
func applyMemoryLimit(s *Settings, v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		s.MemoryLimit = max(n, -1)
		return nil
	}
	n, err := parseBytes(v)
	if err != nil {
		return fmt.Errorf("must be a number of bytes (e.g. 167772160 or 160MiB; -1 for none), got %q", v)
	}
	s.MemoryLimit = n
	return nil
}

// parseBytes reads a positive byte count with a B, KiB, MiB, GiB or TiB suffix.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if !strings.HasSuffix(s, u.suffix) {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(s, u.suffix), 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("not a positive number of bytes")
		}
		if n > (1<<62)/u.factor {
			return 0, fmt.Errorf("too large")
		}
		return n * u.factor, nil
	}
	return 0, fmt.Errorf("no unit")
}
