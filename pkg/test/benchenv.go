package test

import (
	"os"
	"strconv"
	"testing"
)

// BenchCount returns the positive integer in the environment variable name (a benchmark's size, such as
// DOVETAIL_BENCH_NODES), or def when it is unset; any other value fails the benchmark with a line naming it.
func BenchCount(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
