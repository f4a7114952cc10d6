//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// resultPrefix starts the one machine-readable line each benchmark prints: `DOVETAIL_BENCH {json}`.
const resultPrefix = "DOVETAIL_BENCH "

// result is what a benchmark reports: its figures plus when and where it ran.
type result struct {
	Name    string         `json:"name"`
	Date    string         `json:"date"`
	Machine machine        `json:"machine"`
	Figures map[string]any `json:"figures"`
	Targets map[string]any `json:"targets,omitempty"`
}

// report prints the result as one line prefixed with resultPrefix and, when DOVETAIL_BENCH_OUT names a file,
// appends the JSON to it (one object a line).
func report(t *testing.T, r result) {
	t.Helper()
	r.Date = time.Now().UTC().Format(time.RFC3339)
	r.Machine = describeMachine()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encoding the result: %v", err)
	}
	fmt.Println(resultPrefix + string(b))
	if path := os.Getenv("DOVETAIL_BENCH_OUT"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("DOVETAIL_BENCH_OUT: %v", err)
			return
		}
		defer f.Close()
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Errorf("DOVETAIL_BENCH_OUT: %v", err)
		}
	}
}

// seconds rounds a duration to tenths of a second for reports.
func seconds(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond)) / float64(time.Second)
}

// mib converts bytes to MiB, rounded to tenths.
func mib(b int64) float64 { return float64(b*10/(1<<20)) / 10 }

func nproc() int { return runtime.NumCPU() }
